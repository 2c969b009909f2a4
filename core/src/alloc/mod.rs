//! Allocation of rigid parallel jobs across the clusters of a centralized heterogeneous
//! multi-cluster (Shih et al., "A performance goal oriented processor allocation technique
//! for centralized heterogeneous multi-cluster environments"): the model, cluster loads,
//! job orders (FCFS, SJF) and allocators (Best-Fit, Fastest-First, TLPA_BJS).
//!
//! Pure: the research simulator (`hetpilot-research`'s `sim::alloc`) and the live control
//! plane call the same [`Allocator::choose`] with an [`AllocatorInput`]; the live queue is
//! the look-ahead. [`outcome`] summarises a schedule; [`workload`] turns a trace into jobs;
//! [`cluster_setup`] builds the clusters from a command line's words.

pub(crate) mod allocator;
pub mod cluster_setup;
pub(crate) mod load;
pub(crate) mod model;
pub(crate) mod order;
pub mod outcome;
pub mod test_traces;
pub mod workload;

pub use allocator::{
    Allocator, AllocatorInput, AllocatorKind, BestFit, FastestFirst, Tlpa, MAX_TLPA_DEPTH,
};
pub use load::ClusterLoad;
pub use model::{validate_clusters, validate_jobs, AllocError, Cluster, Job};
pub use order::{FcfsOrder, JobOrder, JobOrderKind, SjfOrder};
