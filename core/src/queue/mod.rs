//! In-memory per-application task queues, leases and attempts: the manager's live picture
//! of every task. Deterministic (the clock is passed in); every change it makes comes back
//! as [`Change`]s, which the caller persists (group commit) before answering anyone.

mod app;
mod changes;
mod dag;
mod dag_lease;
mod device_choice;
mod easy;
mod forget;
mod gpu_reserve;
mod group_lease;
mod group_reserve;
pub mod heartbeat_cadence;
mod partitions;
mod plan;
mod queues;
mod reservations;
mod resource_pool;
mod runtime_estimate;
mod staging;
mod variant_lease;

pub use app::{AppEntry, TaskInputs, TaskSlot};
pub use changes::Change;
pub use dag::DagState;
pub use dag_lease::PLAN_WAIT_MS;
pub(crate) use device_choice::{DevicePlan, PlatformSlowdowns};
pub use forget::{ForgetError, OwnerTasks};
pub(crate) use group_lease::choose_members;
pub use group_lease::{GroupLease, Member};
pub use partitions::Partitions;
pub(crate) use plan::{LeasePlan, PlatformPlan};
pub use queues::{AgentEntry, AgentState, LeaseBatch, Queues, ReportCheck, ReportError};
pub use reservations::{Hold, Reservation};
pub use resource_pool::ResourcePool;
pub use staging::{StagingDue, StagingRequest};
pub use variant_lease::LiveVariant;
pub(crate) use variant_lease::{VariantLeasePlan, VariantQuota};

#[cfg(test)]
mod dag_lease_tests;
#[cfg(test)]
mod dag_parallel_tests;
#[cfg(test)]
mod dag_tests;
#[cfg(test)]
mod group_lease_tests;
#[cfg(test)]
mod group_reserve_cost_tests;
#[cfg(test)]
mod reservation_tests;
#[cfg(test)]
mod resource_lease_tests;
#[cfg(test)]
mod staging_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod variant_lease_tests;
