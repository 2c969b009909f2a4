//! Allocation of rigid parallel jobs across the clusters of a centralized heterogeneous
//! multi-cluster (Shih et al., "A performance goal oriented processor allocation technique
//! for centralized heterogeneous multi-cluster environments"): the model, cluster loads,
//! job orders (FCFS, SJF) and allocators (Best-Fit, Fastest-First, TLPA_BJS).
//!
//! Pure: the simulator (`sim::alloc`) and, later, the live manager call the same
//! [`Allocator::choose`] with an [`AllocatorInput`]; the live queue is the look-ahead.

pub mod allocator;
pub mod load;
pub mod model;
pub mod order;

pub use allocator::{
    allocator_by_name, Allocator, AllocatorInput, BestFit, FastestFirst, Tlpa, ALLOCATOR_NAMES,
};
pub use load::{ClusterLoad, Release};
pub use model::{validate_clusters, validate_jobs, AllocError, Cluster, Job};
pub use order::{order_by_name, FcfsOrder, JobOrder, SjfOrder, ORDER_NAMES};
