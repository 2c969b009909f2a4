//! What a second-level mapping is worth: the tasks per second, by the profile's means per
//! co-runner combination, of the nodes MAF builds for given core shares on one platform
//! under one co-runner metric. Lets a study compare metrics (the two-level paper's Section
//! 6.2) through the very mapping code the scheduler runs.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{map_platform, PlatformMapping, SecondLevel};
use crate::sched::{CoRunnerAffinity, RuntimeProfile, SchedulerSettings};

/// Tasks per second of the nodes of `platform` (`nodes` of them) that MAF builds, with
/// co-runner metric `metric`, for the applications `apps` holding `shares[i]` cores each;
/// its leftovers are packed with a fixed seed, the same for every metric.
pub fn maf_throughput(
    profile: &RuntimeProfile,
    platform: usize,
    nodes: u32,
    apps: &[usize],
    shares: &[u32],
    metric: CoRunnerAffinity,
) -> f64 {
    let policy = SecondLevel::Maf.build(&SchedulerSettings {
        co_runner_affinity: metric,
        ..SchedulerSettings::default()
    });
    let mapping = PlatformMapping {
        profile,
        platform,
        nodes,
        cores_per_node: profile.platforms()[platform].cores_per_node,
        apps: apps.to_vec(),
        shares: shares.to_vec(),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let groups = map_platform(policy.as_ref(), &mapping, false, &mut rng);
    let mut total = 0.0;
    for g in &groups {
        let mut members: Vec<usize> = g.slots.iter().map(|&(i, _)| apps[i]).collect();
        members.sort_unstable();
        for &(i, cores) in &g.slots {
            let solo = g.slots.len() == 1 && cores == 1;
            let runtime = profile.runtime_in(apps[i], platform, &members, solo);
            total += g.nodes as f64 * cores as f64 / runtime;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two applications of two cores each on one 4-core node can only share it: the
    /// throughput is each one's cores over its runtime next to the other, under both metrics.
    #[test]
    fn one_shared_node_is_worth_each_members_cores_over_its_runtime_there() {
        let profile = super::super::tests::profile();
        let expected = 2.0 / 121.0 + 2.0 / 115.0;
        for metric in [
            CoRunnerAffinity::RawDifference,
            CoRunnerAffinity::NormalizedDifference,
        ] {
            let got = maf_throughput(&profile, 0, 1, &[0, 1], &[2, 2], metric);
            assert!(
                (got - expected).abs() < 1e-12,
                "{metric:?}: {got} != {expected}"
            );
        }
    }
}
