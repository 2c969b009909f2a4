//! Allocation of rigid parallel jobs across the clusters of a centralized heterogeneous
//! multi-cluster (Shih et al., "A performance goal oriented processor allocation technique
//! for centralized heterogeneous multi-cluster environments"): the model, cluster loads,
//! job orders (FCFS, SJF) and allocators (Best-Fit, Fastest-First, TLPA_BJS).
//!
//! Pure: the simulator (`sim::alloc`) and, later, the live manager call the same
//! [`Allocator::choose`] with an [`AllocatorInput`]; the live queue is the look-ahead.

pub(crate) mod allocator;
pub(crate) mod load;
pub(crate) mod model;
pub(crate) mod order;

#[cfg(test)]
pub(crate) use allocator::Tlpa;
pub use allocator::{allocator_by_name, Allocator, AllocatorInput, MAX_TLPA_DEPTH};
#[cfg(test)]
pub(crate) use allocator::{BestFit, FastestFirst};
pub(crate) use load::ClusterLoad;
pub(crate) use model::validate_jobs;
pub use model::{validate_clusters, AllocError, Cluster, Job};
#[cfg(test)]
pub(crate) use order::SjfOrder;
pub use order::{order_by_name, FcfsOrder, JobOrder};
