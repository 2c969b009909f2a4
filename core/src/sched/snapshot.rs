//! The scheduler's input (a [`Snapshot`] of the system) and output (a [`Decision`]).
//!
//! The live manager and the simulator both build a snapshot whenever something that
//! matters changes (an application arrives or drains, a platform changes) and apply the
//! decision non-preemptively: a core switches application when its running task ends.

use super::error::SchedError;
use super::profile::RuntimeProfile;

/// One application (one user's many-task job) as the scheduler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplicationState {
    /// Row of this application in the runtime profile (distinct per application).
    pub profile_index: usize,
    /// Tasks still waiting in the application's queue (not yet fetched by a pilot).
    pub remaining_tasks: u64,
    /// Index of the owning user in [`Snapshot::user_weights`].
    pub owner: usize,
    /// Tasks already finished (0 for a fresh submission).
    pub completed_tasks: u64,
    /// Seconds since the application was submitted (0 for a fresh submission).
    pub age_s: f64,
}

/// One platform as the scheduler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlatformState {
    /// Column of this platform in the runtime profile (cores per node come from there).
    pub profile_index: usize,
    /// Nodes the system may use on this platform now.
    pub nodes: u32,
}

/// Cores per application per platform: `shares[app][platform]`, indexed like the
/// snapshot's `applications` and `platforms` (the paper's `U[i].share[j]`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CoreAllocation {
    /// `shares[app][platform]`: cores of snapshot application `app` on snapshot platform
    /// `platform`.
    pub shares: Vec<Vec<u32>>,
}

impl CoreAllocation {
    /// An all-zero allocation of the given shape.
    pub(crate) fn zeros(applications: usize, platforms: usize) -> Self {
        Self {
            shares: vec![vec![0; platforms]; applications],
        }
    }

    /// Total cores of application `app` over all platforms.
    #[cfg(test)]
    pub(crate) fn cores_of(&self, app: usize) -> u64 {
        self.shares[app].iter().map(|&c| u64::from(c)).sum()
    }
}

/// A block of identical nodes: each of `nodes` nodes runs the same slots.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroup {
    /// Number of identical nodes in the group.
    pub nodes: u32,
    /// (application index in the snapshot, cores of each node it gets); the applications
    /// are distinct and the cores sum to at most the node's cores.
    pub slots: Vec<(usize, u32)>,
}

/// The scheduler's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// First level: cores per application per platform.
    pub allocation: CoreAllocation,
    /// Second level, per platform (snapshot order): node-level co-runner combinations.
    /// Nodes not covered by any group stay idle.
    pub placements: Vec<Vec<NodeGroup>>,
}

/// Everything a scheduling round needs. Borrowed, so building one is cheap.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// The runtime profile the applications and platforms index into.
    pub profile: &'a RuntimeProfile,
    /// Applications with tasks to run, each a distinct profile row.
    pub applications: &'a [ApplicationState],
    /// Platforms the system may use now, each a distinct profile column.
    pub platforms: &'a [PlatformState],
    /// Weight of each user (indexed by [`ApplicationState::owner`]); empty means equal
    /// weights. A user's entitlement is split equally among its active applications.
    pub user_weights: &'a [f64],
    /// The allocation the previous round returned (PAF keeps users on platforms they had).
    pub previous: Option<&'a CoreAllocation>,
}

impl Snapshot<'_> {
    /// Cores per node of snapshot platform `j`.
    pub(crate) fn cores_per_node(&self, j: usize) -> u32 {
        self.profile.platforms()[self.platforms[j].profile_index].cores_per_node
    }

    /// Total cores of snapshot platform `j`.
    pub(crate) fn cores(&self, j: usize) -> u64 {
        u64::from(self.platforms[j].nodes) * u64::from(self.cores_per_node(j))
    }

    /// Weight of user `owner` (1 when no weights are given).
    pub(crate) fn weight(&self, owner: usize) -> f64 {
        if self.user_weights.is_empty() {
            1.0
        } else {
            self.user_weights[owner]
        }
    }

    /// Check indices and values; every policy may assume a validated snapshot.
    pub fn validate(&self) -> Result<(), SchedError> {
        let invalid =
            |field: String, problem: String| SchedError::InvalidSnapshot { field, problem };
        let n_profile_apps = self.profile.applications().len();
        let mut used = vec![false; n_profile_apps];
        for (i, a) in self.applications.iter().enumerate() {
            if a.profile_index >= n_profile_apps {
                return Err(invalid(
                    format!("applications[{i}].profile_index"),
                    format!("{} is not an application of the profile", a.profile_index),
                ));
            }
            if std::mem::replace(&mut used[a.profile_index], true) {
                return Err(invalid(
                    format!("applications[{i}].profile_index"),
                    "two applications share one profile row".into(),
                ));
            }
            if !(a.age_s.is_finite() && a.age_s >= 0.0) {
                return Err(invalid(
                    format!("applications[{i}].age_s"),
                    format!("must be a non-negative number of seconds, got {}", a.age_s),
                ));
            }
            if !self.user_weights.is_empty() && a.owner >= self.user_weights.len() {
                return Err(invalid(
                    format!("applications[{i}].owner"),
                    format!("user {} has no weight", a.owner),
                ));
            }
        }
        for (u, &w) in self.user_weights.iter().enumerate() {
            if !(w.is_finite() && w > 0.0) {
                return Err(invalid(
                    format!("user_weights[{u}]"),
                    format!("must be a positive number, got {w}"),
                ));
            }
        }
        let n_profile_platforms = self.profile.platforms().len();
        let mut used = vec![false; n_profile_platforms];
        for (j, p) in self.platforms.iter().enumerate() {
            if p.profile_index >= n_profile_platforms {
                return Err(invalid(
                    format!("platforms[{j}].profile_index"),
                    format!("{} is not a platform of the profile", p.profile_index),
                ));
            }
            if std::mem::replace(&mut used[p.profile_index], true) {
                return Err(invalid(
                    format!("platforms[{j}].profile_index"),
                    "two platforms share one profile column".into(),
                ));
            }
        }
        if let Some(prev) = self.previous {
            let shape_ok = prev.shares.len() == self.applications.len()
                && prev.shares.iter().all(|r| r.len() == self.platforms.len());
            if !shape_ok {
                return Err(invalid(
                    "previous".into(),
                    "allocation shape differs from applications × platforms".into(),
                ));
            }
        }
        Ok(())
    }
}
