//! Batch-shared-I/O staging (Vydyanathan et al., "Scheduling of Tasks with Batch-shared
//! I/O on Heterogeneous Systems"): the hypergraph model of tasks and the files they share,
//! our multilevel km1 partitioner, the Het-HPS mapping refinement and transfer ordering,
//! the baselines (HPS, MinMin, MaxMin, Sufferage, SJF) and the IMAGE/SAT workload
//! generators. Pure: data in, plans out.

pub mod baselines;
pub mod error;
pub mod estimate;
pub mod het_hps;
pub mod hmetis;
pub mod hypergraph;
pub mod metrics;
pub mod model;
pub mod ordering;
pub mod partition;
pub mod platforms;
pub mod policy;
pub mod workload;

pub use error::StagingError;
pub use hypergraph::Hypergraph;
pub use partition::{partition, Partition, PartitionConfig};
pub use policy::{policy_by_name, StagingPlan, StagingPolicy, POLICY_NAMES};
