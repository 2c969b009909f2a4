//! Multi-resource, heterogeneity-aware fairshare (Klusáček & Rudová, "Multi-Resource Aware
//! Fairsharing for Heterogeneous Systems"): the machine pool, per-node job requests,
//! penalty functions P(j) (eq. 3-5, 7-8, GPUs as a third resource), the decayed usage ledger
//! F_u (eq. 6, 9) and user priority ordering with optional shares.
//!
//! Pure: data in, numbers out. The live manager feeds the ledger with job starts/ends or
//! finished-work records; the research simulator (`hetpilot-research`'s `sim::fairshare`) does the same from a trace.

pub(crate) mod machine;
pub(crate) mod penalty;
pub(crate) mod priority;
pub(crate) mod request;
pub(crate) mod usage;

pub use machine::{Machine, MachinePool, MachinePoolError};
pub use penalty::Penalty;
pub use penalty::{
    CpuOnly, MachinePrice, MultiResource, PenaltyError, PenaltyFunction, ProcessorEquivalent,
    RequestPrice,
};
pub use priority::effective_usage;
pub use priority::{priorities, Shares, UserPriority};
pub use request::{Constraint, JobRequest, NodeRequest};
pub(crate) use usage::UsageRecord;
pub use usage::{JobStart, UsageAccount, UsageError, UsageLedger};
