//! The two-level scheduling core (the two-level fairness paper, Sections 3-5), pure:
//! profile table → affinity metrics → first level (cores per application per platform)
//! → second level (co-runner combinations per node), plus the fairness metrics.
//!
//! Entry point: build a [`Scheduler`] from [`SchedulerSettings`] and call
//! [`Scheduler::schedule`] with a [`Snapshot`] and a seeded RNG.

pub(crate) mod affinity;
pub(crate) mod affinity_tables;
pub(crate) mod error;
pub(crate) mod first_level;
pub(crate) mod metrics;
pub(crate) mod profile;
pub(crate) mod scheduler;
pub(crate) mod second_level;
pub(crate) mod settings;
pub(crate) mod snapshot;
pub mod test_profiles;
pub mod variants;
pub(crate) mod weighted_max_min;

pub use affinity::{CoRunnerAffinity, PlatformAffinity};
pub use affinity_tables::AffinityTables;
pub use error::{RuntimeProfileError, SchedError};
pub use first_level::FirstLevel;
pub use metrics::{fairness_index, fastest_one_core_throughput};
pub use profile::{
    ApplicationProfile, CombinationSpec, ProfiledPlatform, RuntimeDistribution, RuntimeProfile,
};
pub use scheduler::Scheduler;
pub use second_level::{maf_throughput, SecondLevel};
pub use settings::SchedulerSettings;
pub use snapshot::{
    ApplicationState, CoreAllocation, Decision, NodeGroup, PlatformState, Snapshot,
};
