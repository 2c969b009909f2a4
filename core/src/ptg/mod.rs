//! Several parallel task graphs (PTGs) competing for one homogeneous cluster: the model,
//! HCPA, and every algorithm of Casanova, Desprez and Suter, "On Cluster Resource
//! Allocation for Multiple Parallel Task Graphs" (INRIA RR-7224, 2010; JPDC 2010),
//! `../shared/papers/multiple-ptg-cluster-allocation.md`. Pure: PTGs and a cluster in,
//! schedules and metrics out; random tie-breaking through an injected RNG.
//!
//! - [`model`]: moldable tasks (`T(v, p)`, Amdahl), the complexities of §5.1.2, Table 1.
//! - [`graph`]: the PTG, bottom/top levels, precedence levels, width, sequential work.
//! - [`schedule`]: schedules, the two processor models, backfilling, a checker.
//! - [`list`]: list scheduling by priority (static, and on ready tasks).
//! - [`hcpa`]: HCPA for one PTG and a PTG's moldable-job profile.
//! - [`mrt`]: the 3/2 + ε dual approximation for moldable jobs and the knapsacks of CAFM.
//! - [`algorithms`]: the 19 algorithms of §4 behind one trait, and how to run them.
//! - [`metrics`]: average stretch (ΣC/ΣC*), makespan, maximum stretch, utilization.
//! - [`live`]: the live manager's use of them: the workflow policy by name, and the plan
//!   (planned start and processors of every task) it makes for competing workflows.

pub mod algorithms;
pub mod graph;
pub mod hcpa;
pub mod list;
pub mod live;
pub mod metrics;
pub mod model;
pub mod mrt;
pub mod schedule;

pub use algorithms::{ClusterPtg, Instance, MultiPtgAlgorithm};
pub use graph::{Ptg, PtgError};
pub use metrics::Metrics;
pub use model::{Cluster, Complexity, MoldableTask};
pub use schedule::{Placement, Schedule};
