//! Second level (Section 5.2, Algorithm 3): on each platform, turn the applications'
//! core shares into node-level co-runner combinations.
//!
//! A policy implements [`SecondLevelPolicy`] and places whole combinations through a
//! [`MappingState`]; afterwards the shared frame packs whatever shares are left into
//! random combinations on the free nodes (Algorithm 3 lines 12-15). Policies are named
//! by a [`SecondLevel`], which builds them.

mod all_core;
mod ca_round_robin;
mod device;
mod maf;
mod random;
mod state;
mod throughput;

use std::collections::HashMap;

use rand::seq::SliceRandom;
use rand::RngCore;

pub(crate) use device::{choose_device, DeviceCandidate};
pub(crate) use state::MappingState;
pub use throughput::maf_throughput;

use super::profile::RuntimeProfile;
use super::settings::SchedulerSettings;
use super::snapshot::NodeGroup;

/// One platform's mapping problem: shares of the first level, in local indices.
#[derive(Debug, Clone)]
pub(crate) struct PlatformMapping<'a> {
    pub(crate) profile: &'a RuntimeProfile,
    /// Profile index of the platform.
    pub(crate) platform: usize,
    pub(crate) nodes: u32,
    pub(crate) cores_per_node: u32,
    /// Profile index of each application with a share here.
    pub(crate) apps: Vec<usize>,
    /// Cores of each application here (`U[i].share[j]`).
    pub(crate) shares: Vec<u32>,
}

/// A second-level task mapping policy.
pub(crate) trait SecondLevelPolicy: std::fmt::Debug + Send + Sync {
    /// Place combinations (Algorithm 3 lines 5-11) until the policy has nothing to add.
    fn place(&self, state: &mut MappingState, rng: &mut dyn RngCore);
}

hetpilot_protocol::named_enum! {
    /// A second-level policy, by the name settings and scenarios give it.
    pub enum SecondLevel("second-level policy") {
        /// Every node runs one application's tasks (baseline).
        AllCore = "all-core",
        /// A combination drawn uniformly per node (baseline).
        Random = "random",
        /// Most Affected First (Algorithm 3).
        Maf = "maf",
        /// Co-runner Affinity based Round-Robin, up to P_unit nodes a turn.
        CaRoundRobin = "ca-rr",
    }
}

impl SecondLevel {
    /// The policy, tuned by `settings`.
    pub(crate) fn build(self, settings: &SchedulerSettings) -> Box<dyn SecondLevelPolicy> {
        match self {
            SecondLevel::AllCore => all_core::build(settings),
            SecondLevel::Random => random::build(settings),
            SecondLevel::Maf => maf::build(settings),
            SecondLevel::CaRoundRobin => ca_round_robin::build(settings),
        }
    }
}

/// Run `policy` on one platform, then pack the leftovers randomly (lines 12-15).
/// The groups name applications by their local index in `mapping.apps`.
pub(crate) fn map_platform(
    policy: &dyn SecondLevelPolicy,
    mapping: &PlatformMapping,
    pairwise: bool,
    rng: &mut dyn RngCore,
) -> Vec<NodeGroup> {
    let mut state = MappingState::new(mapping, pairwise);
    policy.place(&mut state, rng);
    let (mut groups, leftover, free_nodes) = state.finish();
    let mut cores: Vec<usize> = leftover
        .iter()
        .enumerate()
        .flat_map(|(a, &s)| std::iter::repeat_n(a, s as usize))
        .collect();
    cores.shuffle(rng);
    let mut index: HashMap<Vec<(usize, u32)>, usize> = HashMap::new();
    for chunk in cores
        .chunks(mapping.cores_per_node.max(1) as usize)
        .take(free_nodes as usize)
    {
        let mut slots: Vec<(usize, u32)> = Vec::new();
        for &a in chunk {
            match slots.iter_mut().find(|(x, _)| *x == a) {
                Some(slot) => slot.1 += 1,
                None => slots.push((a, 1)),
            }
        }
        slots.sort_unstable();
        match index.get(&slots) {
            Some(&g) => groups[g].nodes += 1,
            None => {
                index.insert(slots.clone(), groups.len());
                groups.push(NodeGroup { nodes: 1, slots });
            }
        }
    }
    groups
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sched::profile::{
        ApplicationProfile, CombinationSpec, ProfiledPlatform, RuntimeDistribution,
    };
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Four applications on one 4-core platform with every 1-, 2- and 4-combination;
    /// application 0 suffers badly next to application 3.
    pub(crate) fn profile() -> RuntimeProfile {
        let apps = (0..4)
            .map(|i| ApplicationProfile {
                name: format!("app{i}"),
                distribution: RuntimeDistribution::Constant,
            })
            .collect();
        let platforms = vec![ProfiledPlatform {
            name: "p".into(),
            cores_per_node: 4,
            max_nodes: None,
        }];
        let one_core = vec![vec![100.0]; 4];
        let mut combos = Vec::new();
        for a in 0..4 {
            combos.push(CombinationSpec {
                platform: 0,
                runtimes: vec![(a, 110.0 + a as f64)],
            });
            for b in a + 1..4 {
                let ra = if a == 0 && b == 3 {
                    300.0
                } else {
                    120.0 + b as f64
                };
                combos.push(CombinationSpec {
                    platform: 0,
                    runtimes: vec![(a, ra), (b, 115.0)],
                });
            }
        }
        combos.push(CombinationSpec {
            platform: 0,
            runtimes: (0..4).map(|a| (a, 150.0)).collect(),
        });
        RuntimeProfile::new("<memory>", apps, platforms, one_core, combos).unwrap()
    }

    proptest! {
        #[test]
        fn every_policy_places_exactly_the_shares(
            shares in proptest::collection::vec(0u32..40, 0..5),
            seed in any::<u64>(),
            pairwise in any::<bool>(),
        ) {
            let profile = profile();
            let n = shares.len().min(4);
            let shares = shares[..n].to_vec();
            let total: u32 = shares.iter().sum();
            let nodes = total.div_ceil(4) + 1;
            let mapping = PlatformMapping {
                profile: &profile, platform: 0, nodes, cores_per_node: 4,
                apps: (0..n).collect(), shares: shares.clone(),
            };
            for &name in SecondLevel::ALL {
                let settings = SchedulerSettings { pairwise, p_unit: 2, ..Default::default() };
                let policy = name.build(&settings);
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let groups = map_platform(policy.as_ref(), &mapping, pairwise, &mut rng);
                let used_nodes: u32 = groups.iter().map(|g| g.nodes).sum();
                prop_assert!(used_nodes <= nodes, "{} used {} of {} nodes", name, used_nodes, nodes);
                let mut placed = vec![0u32; n];
                for g in &groups {
                    prop_assert!(g.slots.iter().map(|s| s.1).sum::<u32>() <= 4);
                    for &(a, c) in &g.slots { placed[a] += c * g.nodes; }
                }
                prop_assert_eq!(&placed, &shares, "{} misplaced shares", name);
            }
        }
    }

    #[test]
    fn unknown_policy_lists_the_known_ones() {
        let err = "best".parse::<SecondLevel>().unwrap_err().to_string();
        assert!(err.contains("maf") && err.contains("best"), "{err}");
    }
}
