//! Batch-shared-I/O staging (Vydyanathan et al., "Scheduling of Tasks with Batch-shared
//! I/O on Heterogeneous Systems"): the hypergraph model of tasks and the files they share,
//! our multilevel km1 partitioner, the Het-HPS mapping refinement and transfer ordering,
//! the baselines (HPS, MinMin, MaxMin, Sufferage, SJF) and the IMAGE/SAT workload
//! generators. Pure: data in, plans out.
//!
//! Planner API for the live manager: build a [`model::Workload`] (tasks with the files
//! they read, each file with size and home storage node) and a [`model::StagingPlatform`]
//! (clusters with node count, C_i, LBW_i, shared link bandwidth; storage nodes with
//! IBW_p), then `StagingAlgorithm::HetHps.build().plan(&workload, &platform, seed)` returns a
//! [`StagingPlan`]: per-node ordered task lists (nodes in [`model::StagingPlatform::nodes`]
//! order) or, for SJF, one shared queue. The research simulator (`hetpilot-research`'s `sim::staging`) replays
//! such plans; `partition` is usable on its own for any hypergraph.

pub(crate) mod baselines;
pub(crate) mod error;
pub(crate) mod estimate;
pub(crate) mod het_hps;
pub mod hmetis;
pub(crate) mod hypergraph;
pub mod metrics;
pub(crate) mod model;
pub(crate) mod ordering;
pub(crate) mod partition;
pub mod platforms;
pub(crate) mod policy;
pub(crate) mod registry;
pub mod workload;

pub use baselines::{MctSelection, OnlineMct};
pub use error::StagingError;
pub use hypergraph::Hypergraph;
pub use model::{
    ComputeCluster, DataFile, NodeInfo, StagingPlatform, StorageNode, Task, TaskId, Workload,
};
pub use partition::{partition, Partition, PartitionSettings};
pub use policy::{StagingPlan, StagingPolicy};
pub use registry::StagingAlgorithm;
