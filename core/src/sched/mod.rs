//! The two-level scheduling core (the two-level fairness paper, Sections 3-5), pure:
//! profile table → affinity metrics → first level (cores per application per platform)
//! → second level (co-runner combinations per node), plus the fairness metrics.
//!
//! Entry point: build a [`Scheduler`] from [`SchedulerSettings`] and call
//! [`Scheduler::schedule`] with a [`Snapshot`] and a seeded RNG.

pub mod affinity;
pub mod affinity_tables;
pub mod error;
pub mod first_level;
pub mod metrics;
pub mod profile;
pub mod scheduler;
pub mod second_level;
pub mod settings;
pub mod snapshot;
pub mod test_profiles;
pub mod weighted_max_min;

pub use affinity::{CoRunnerAffinity, PlatformAffinity};
pub use error::{RuntimeProfileError, SchedError};
pub use profile::RuntimeProfile;
pub use scheduler::Scheduler;
pub use settings::SchedulerSettings;
pub use snapshot::{
    ApplicationState, CoreAllocation, Decision, NodeGroup, PlatformState, Snapshot,
};
