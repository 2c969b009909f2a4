//! Multi-resource, heterogeneity-aware fairshare (Klusáček & Rudová, "Multi-Resource Aware
//! Fairsharing for Heterogeneous Systems"): the machine pool, per-node job requests,
//! penalty functions P(j) (eq. 3-5, 7-8, GPUs as a third resource), the decayed usage ledger
//! F_u (eq. 6, 9) and user priority ordering with optional shares.
//!
//! Pure: data in, numbers out. The live manager feeds the ledger with job starts/ends or
//! finished-work records; the simulator (`sim::fairshare`) does the same from a trace.

pub mod machine;
pub mod penalty;
pub mod priority;
pub mod request;
pub mod usage;

pub use machine::{Machine, MachinePool, MachinePoolError};
pub use penalty::{
    penalty_by_name, CpuOnly, MultiResource, PenaltyError, PenaltyFunction, ProcessorEquivalent,
    PENALTY_NAMES,
};
pub use priority::{effective_usage, priorities, Shares, UserPriority};
pub use request::{Constraint, JobRequest, NodeRequest};
pub use usage::{JobStart, UsageError, UsageLedger, UsageRecord};
