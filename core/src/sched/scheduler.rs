//! The two-level scheduler: one call turns a [`Snapshot`] into a [`Decision`] by running
//! the configured first-level policy and, per platform, the second-level policy.

use rand::RngCore;

use super::affinity::{co_runner_affinity, platform_affinities, CoRunnerAffinity};
use super::error::SchedError;
use super::first_level::{FirstLevelInput, FirstLevelPolicy};
use super::second_level::{map_platform, PlatformMapping, SecondLevelPolicy};
use super::settings::SchedulerSettings;
use super::snapshot::{CoreAllocation, Decision, NodeGroup, Snapshot};

/// A configured pair of policies. Cheap to keep and reuse across rounds.
#[derive(Debug)]
pub struct Scheduler {
    settings: SchedulerSettings,
    first: Box<dyn FirstLevelPolicy>,
    second: Box<dyn SecondLevelPolicy>,
}

impl Scheduler {
    /// Check the settings and look both policies up by name.
    pub fn new(settings: SchedulerSettings) -> Result<Self, SchedError> {
        settings.validate()?;
        let first = settings.first_level.build(&settings);
        let second = settings.second_level.build(&settings);
        Ok(Self {
            settings,
            first,
            second,
        })
    }

    /// The settings this scheduler was built with.
    pub fn settings(&self) -> &SchedulerSettings {
        &self.settings
    }

    /// One scheduling round. The snapshot is validated first; any valid snapshot,
    /// including one without applications or cores, yields a decision.
    pub fn schedule(
        &self,
        snapshot: &Snapshot,
        rng: &mut dyn RngCore,
    ) -> Result<Decision, SchedError> {
        snapshot.validate()?;
        let allocation = self.allocate(snapshot, rng);
        let placements = self.map(snapshot, &allocation, rng);
        Ok(Decision {
            allocation,
            placements,
        })
    }

    /// First level only (the snapshot must be valid).
    pub fn allocate(&self, snapshot: &Snapshot, rng: &mut dyn RngCore) -> CoreAllocation {
        let n = snapshot.applications.len();
        let m = snapshot.platforms.len();
        let mut allocation = CoreAllocation::zeros(n, m);
        let input = first_level_input(snapshot, &self.settings, self.first.uses_speed());
        if input.apps.is_empty() || input.platforms.is_empty() {
            return allocation;
        }
        let local = self.first.allocate(&input, rng);
        for (a, row) in local.iter().enumerate() {
            for (p, &cores) in row.iter().enumerate() {
                allocation.shares[input.apps[a]][input.platforms[p]] =
                    u32::try_from(cores).unwrap_or(u32::MAX);
            }
        }
        allocation
    }

    /// Second level only: node combinations per platform for a given allocation.
    pub fn map(
        &self,
        snapshot: &Snapshot,
        allocation: &CoreAllocation,
        rng: &mut dyn RngCore,
    ) -> Vec<Vec<NodeGroup>> {
        (0..snapshot.platforms.len())
            .map(|j| {
                let holders: Vec<usize> = (0..snapshot.applications.len())
                    .filter(|&i| allocation.shares[i][j] > 0)
                    .collect();
                if holders.is_empty() || snapshot.platforms[j].nodes == 0 {
                    return Vec::new();
                }
                let mapping = PlatformMapping {
                    profile: snapshot.profile,
                    platform: snapshot.platforms[j].profile_index,
                    nodes: snapshot.platforms[j].nodes,
                    cores_per_node: snapshot.cores_per_node(j),
                    apps: holders
                        .iter()
                        .map(|&i| snapshot.applications[i].profile_index)
                        .collect(),
                    shares: holders.iter().map(|&i| allocation.shares[i][j]).collect(),
                };
                let mut groups =
                    map_platform(self.second.as_ref(), &mapping, self.settings.pairwise, rng);
                for g in &mut groups {
                    for slot in &mut g.slots {
                        slot.0 = holders[slot.0];
                    }
                }
                groups
            })
            .collect()
    }
}

/// Restrict a snapshot to active applications and platforms with cores, and compute the
/// platform affinities (Algorithm 1/2 line 6), speeds and entitlements.
fn first_level_input(
    snapshot: &Snapshot,
    settings: &SchedulerSettings,
    with_speed: bool,
) -> FirstLevelInput {
    let apps: Vec<usize> = (0..snapshot.applications.len())
        .filter(|&i| snapshot.applications[i].remaining_tasks > 0)
        .collect();
    let platforms: Vec<usize> = (0..snapshot.platforms.len())
        .filter(|&j| snapshot.cores(j) > 0)
        .collect();
    let profile_apps: Vec<usize> = apps
        .iter()
        .map(|&i| snapshot.applications[i].profile_index)
        .collect();
    let profile_platforms: Vec<usize> = platforms
        .iter()
        .map(|&j| snapshot.platforms[j].profile_index)
        .collect();
    let affinity = platform_affinities(
        snapshot.profile,
        &profile_apps,
        &profile_platforms,
        settings.platform_affinity,
    );
    // Speed relative to Fastest-OneCore, with the expected co-runner slowdown: the mean
    // normalized difference over the profiled combinations of active applications.
    let mut active = vec![false; snapshot.profile.applications().len()];
    for &a in &profile_apps {
        active[a] = true;
    }
    let speed_of = |a: usize| -> Vec<f64> {
        let solo: Vec<f64> = profile_platforms
            .iter()
            .map(|&p| snapshot.profile.one_core(a, p))
            .collect();
        let fastest = solo.iter().cloned().fold(f64::INFINITY, f64::min);
        profile_platforms
            .iter()
            .zip(&solo)
            .map(|(&p, &s)| {
                let slowdown = co_runner_affinity(
                    snapshot.profile,
                    a,
                    p,
                    CoRunnerAffinity::NormalizedDifference,
                    |c| c.members.iter().all(|&m| active[m]),
                )
                .unwrap_or(0.0);
                fastest / (s * (1.0 + slowdown.max(0.0) / 100.0))
            })
            .collect()
    };
    let speed = if with_speed {
        profile_apps.iter().map(|&a| speed_of(a)).collect()
    } else {
        Vec::new()
    };
    // A user's weight is split equally among its active applications.
    let mut per_owner = std::collections::HashMap::new();
    for &i in &apps {
        *per_owner
            .entry(snapshot.applications[i].owner)
            .or_insert(0usize) += 1;
    }
    let entitlement = apps
        .iter()
        .map(|&i| {
            let owner = snapshot.applications[i].owner;
            snapshot.weight(owner) / per_owner[&owner] as f64
        })
        .collect();
    let previous = apps
        .iter()
        .map(|&i| {
            platforms
                .iter()
                .map(|&j| snapshot.previous.map_or(0, |prev| prev.shares[i][j]))
                .collect()
        })
        .collect();
    let fastest_runtime = profile_apps
        .iter()
        .map(|&a| {
            profile_platforms
                .iter()
                .map(|&p| snapshot.profile.one_core(a, p))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    FirstLevelInput {
        completed_tasks: apps
            .iter()
            .map(|&i| snapshot.applications[i].completed_tasks)
            .collect(),
        age_s: apps
            .iter()
            .map(|&i| snapshot.applications[i].age_s)
            .collect(),
        fastest_runtime,
        demand: apps
            .iter()
            .map(|&i| snapshot.applications[i].remaining_tasks)
            .collect(),
        capacity: platforms.iter().map(|&j| snapshot.cores(j)).collect(),
        apps,
        platforms,
        affinity,
        speed,
        entitlement,
        feasible: vec![vec![true; profile_platforms.len()]; profile_apps.len()],
        previous,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::snapshot::{ApplicationState, PlatformState};
    use crate::sched::test_profiles::synthetic_profile;
    use crate::sched::{FirstLevel, SecondLevel};
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn all_settings() -> Vec<SchedulerSettings> {
        let mut out = Vec::new();
        for &first in FirstLevel::ALL {
            for &second in SecondLevel::ALL {
                out.push(SchedulerSettings {
                    first_level: first,
                    second_level: second,
                    ..Default::default()
                });
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn decisions_place_exactly_the_allocation(
            tasks in proptest::collection::vec(0u64..200, 0..6),
            nodes in proptest::collection::vec(0u32..12, 1..4),
            seed in any::<u64>(),
        ) {
            let profile = synthetic_profile(6, 3, 4, 3, seed);
            let applications: Vec<ApplicationState> = tasks.iter().enumerate().map(|(i, &t)| ApplicationState { profile_index: i, remaining_tasks: t, owner: i, completed_tasks: 0, age_s: 0.0 }).collect();
            let platforms: Vec<PlatformState> = nodes.iter().enumerate().map(|(j, &n)| PlatformState { profile_index: j, nodes: n }).collect();
            let snapshot = Snapshot { profile: &profile, applications: &applications, platforms: &platforms, user_weights: &[], previous: None };
            for settings in all_settings() {
                let label = settings.label();
                let scheduler = Scheduler::new(settings).unwrap();
                let d = scheduler.schedule(&snapshot, &mut ChaCha8Rng::seed_from_u64(seed)).unwrap();
                for (j, groups) in d.placements.iter().enumerate() {
                    let used: u32 = groups.iter().map(|g| g.nodes).sum();
                    prop_assert!(used <= platforms[j].nodes, "{}: too many nodes", label);
                    for (i, _) in applications.iter().enumerate() {
                        let placed: u32 = groups.iter().map(|g| g.nodes * g.slots.iter().filter(|s| s.0 == i).map(|s| s.1).sum::<u32>()).sum();
                        prop_assert_eq!(placed, d.allocation.shares[i][j], "{}: app {} platform {}", label, i, j);
                    }
                }
                for (i, a) in applications.iter().enumerate() {
                    prop_assert!(d.allocation.cores_of(i) <= a.remaining_tasks, "{}", label);
                }
            }
        }
    }

    #[test]
    fn degenerate_snapshots_give_empty_decisions() {
        let profile = synthetic_profile(2, 2, 2, 1, 1);
        let scheduler = Scheduler::new(SchedulerSettings::default()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let none = Snapshot {
            profile: &profile,
            applications: &[],
            platforms: &[],
            user_weights: &[],
            previous: None,
        };
        let d = scheduler.schedule(&none, &mut rng).unwrap();
        assert!(d.allocation.shares.is_empty() && d.placements.is_empty());
        let apps = [ApplicationState {
            profile_index: 0,
            remaining_tasks: 5,
            owner: 0,
            completed_tasks: 0,
            age_s: 0.0,
        }];
        let empty_platform = [PlatformState {
            profile_index: 1,
            nodes: 0,
        }];
        let s = Snapshot {
            profile: &profile,
            applications: &apps,
            platforms: &empty_platform,
            user_weights: &[],
            previous: None,
        };
        let d = scheduler.schedule(&s, &mut rng).unwrap();
        assert_eq!(d.allocation.shares, vec![vec![0]]);
        assert_eq!(d.placements, vec![Vec::new()]);
    }

    #[test]
    fn invalid_snapshots_are_rejected() {
        let profile = synthetic_profile(2, 2, 2, 1, 1);
        let scheduler = Scheduler::new(SchedulerSettings::default()).unwrap();
        let apps = [ApplicationState {
            profile_index: 7,
            remaining_tasks: 5,
            owner: 0,
            completed_tasks: 0,
            age_s: 0.0,
        }];
        let s = Snapshot {
            profile: &profile,
            applications: &apps,
            platforms: &[],
            user_weights: &[],
            previous: None,
        };
        let e = scheduler
            .schedule(&s, &mut ChaCha8Rng::seed_from_u64(1))
            .unwrap_err();
        assert!(
            e.to_string().contains("applications[0].profile_index"),
            "{e}"
        );
        let apps = [ApplicationState {
            profile_index: 0,
            remaining_tasks: 5,
            owner: 0,
            completed_tasks: 0,
            age_s: -1.0,
        }];
        let s = Snapshot {
            profile: &profile,
            applications: &apps,
            platforms: &[],
            user_weights: &[],
            previous: None,
        };
        let e = scheduler
            .schedule(&s, &mut ChaCha8Rng::seed_from_u64(1))
            .unwrap_err();
        assert!(e.to_string().contains("applications[0].age_s"), "{e}");
    }

    #[test]
    fn user_weights_scale_the_first_level() {
        let profile = synthetic_profile(2, 1, 2, 1, 3);
        let apps = [
            ApplicationState {
                profile_index: 0,
                remaining_tasks: 10_000,
                owner: 0,
                completed_tasks: 0,
                age_s: 0.0,
            },
            ApplicationState {
                profile_index: 1,
                remaining_tasks: 10_000,
                owner: 1,
                completed_tasks: 0,
                age_s: 0.0,
            },
        ];
        let platforms = [PlatformState {
            profile_index: 0,
            nodes: 150,
        }];
        let weights = [2.0, 1.0];
        // PAF gives a lone platform to its top-k% applications, whatever their weights.
        for first in [
            FirstLevel::Fairness,
            FirstLevel::PaRoundRobin,
            FirstLevel::WaterFill,
            FirstLevel::Aaf,
        ] {
            let scheduler = Scheduler::new(SchedulerSettings {
                first_level: first,
                ..Default::default()
            })
            .unwrap();
            let s = Snapshot {
                profile: &profile,
                applications: &apps,
                platforms: &platforms,
                user_weights: &weights,
                previous: None,
            };
            let d = scheduler
                .schedule(&s, &mut ChaCha8Rng::seed_from_u64(1))
                .unwrap();
            let (a, b) = (d.allocation.cores_of(0), d.allocation.cores_of(1));
            assert_eq!(a + b, 300, "{first}");
            if first != FirstLevel::WaterFill {
                assert_eq!((a, b), (200, 100), "{first}");
            } else {
                assert!(a > b, "{first}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn unknown_names_are_reported() {
        let e = "magic".parse::<FirstLevel>().unwrap_err();
        assert!(e.to_string().contains("pa-rr"), "{e}");
    }
}
