//! Job scheduling order of the basic job scheduling (BJS) algorithms: FCFS and SJF, no
//! backfilling (only the head of the queue may start). One plug-in per order behind
//! [`JobOrder`], selected by name.

use super::model::Job;

/// The queue is sorted by `key` (smaller first), ties by submission order.
pub trait JobOrder: Send + Sync {
    /// Name as given on the command line and printed in reports (`fcfs`, `sjf`).
    fn name(&self) -> &'static str;
    /// A non-negative sort key.
    fn key(&self, job: &Job) -> f64;
}

/// First-come-first-served: by submit time.
#[derive(Debug, Clone, Copy, Default)]
pub struct FcfsOrder;

impl JobOrder for FcfsOrder {
    fn name(&self) -> &'static str {
        "fcfs"
    }
    fn key(&self, job: &Job) -> f64 {
        job.submit
    }
}

/// Shortest-job-first: by the user's runtime estimate (the only runtime known at submit).
#[derive(Debug, Clone, Copy, Default)]
pub struct SjfOrder;

impl JobOrder for SjfOrder {
    fn name(&self) -> &'static str {
        "sjf"
    }
    fn key(&self, job: &Job) -> f64 {
        job.estimate
    }
}

hetpilot_protocol::named_enum! {
    /// The job orders, by the names command lines and experiment files give them.
    pub enum JobOrderKind("job order") {
        /// First come, first served.
        Fcfs = "fcfs",
        /// Shortest (estimated) job first.
        Sjf = "sjf",
    }
}

impl JobOrderKind {
    /// The order.
    pub fn build(self) -> Box<dyn JobOrder> {
        match self {
            JobOrderKind::Fcfs => Box::new(FcfsOrder),
            JobOrderKind::Sjf => Box::new(SjfOrder),
        }
    }
}
