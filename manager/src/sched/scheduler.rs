//! The two-level scheduler: one call turns a [`Snapshot`] into a [`Decision`] by running
//! the configured first-level policy and, per platform, the second-level policy.

use rand::RngCore;

use super::affinity::{co_runner_affinity, platform_affinities, CoRunnerAffinity};
use super::error::SchedError;
use super::first_level::{self, FirstLevelInput, FirstLevelPolicy};
use super::second_level::{self, map_platform, PlatformMapping, SecondLevelPolicy};
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
        let first = first_level::by_name(&settings)?;
        let second = second_level::by_name(&settings)?;
        Ok(Self {
            settings,
            first,
            second,
        })
    }

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
        let input = first_level_input(snapshot, &self.settings);
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
fn first_level_input(snapshot: &Snapshot, settings: &SchedulerSettings) -> FirstLevelInput {
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
    let speed = profile_apps
        .iter()
        .map(|&a| {
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
        })
        .collect();
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
    FirstLevelInput {
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
        previous,
    }
}
