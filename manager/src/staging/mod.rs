//! Batch-shared-I/O staging (Vydyanathan et al., "Scheduling of Tasks with Batch-shared
//! I/O on Heterogeneous Systems"): the hypergraph model of tasks and the files they share,
//! our multilevel km1 partitioner, the Het-HPS mapping refinement and transfer ordering,
//! the baselines (HPS, MinMin, MaxMin, Sufferage, SJF) and the IMAGE/SAT workload
//! generators. Pure: data in, plans out.

pub mod error;
pub mod hmetis;
pub mod hypergraph;
pub mod metrics;
pub mod partition;

pub use error::StagingError;
pub use hypergraph::Hypergraph;
pub use partition::{partition, Partition, PartitionConfig};
