//! Job scheduling order of the basic job scheduling (BJS) algorithms: FCFS and SJF, no
//! backfilling (only the head of the queue may start). One plug-in per order behind
//! [`JobOrder`], selected by name.

use super::model::{AllocError, Job};

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

/// Names accepted by [`order_by_name`].
pub(crate) const ORDER_NAMES: [&str; 2] = ["fcfs", "sjf"];

/// The job order called `name`: `fcfs` or `sjf`.
pub fn order_by_name(name: &str) -> Result<Box<dyn JobOrder>, AllocError> {
    match name {
        "fcfs" => Ok(Box::new(FcfsOrder)),
        "sjf" => Ok(Box::new(SjfOrder)),
        _ => Err(AllocError::UnknownPolicy {
            kind: "job scheduler",
            name: name.to_string(),
            known: ORDER_NAMES.join(", "),
        }),
    }
}
