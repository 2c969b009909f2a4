//! What one simulation run measured: per-application throughput normalized to
//! Fastest-OneCore, the fairness index, and the system makespan.

/// One application's result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AppOutcome {
    /// Submission time, seconds.
    pub(crate) arrival: f64,
    /// Time its last task ended (`None` if it never could run, e.g. no cores at all).
    pub(crate) finish: Option<f64>,
    pub(crate) tasks: u64,
    /// Tasks per hour from submission to finish (`None` for zero tasks or no finish).
    pub(crate) throughput_per_hour: Option<f64>,
    /// Throughput over its Fastest-OneCore throughput (Section 3).
    pub(crate) normalized_throughput: Option<f64>,
}

/// One run's result.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub(crate) apps: Vec<AppOutcome>,
    /// 1 − σ/μ of the normalized throughputs of the applications that ran.
    pub fairness: f64,
    /// The same with each fair share taken over the applications present during the
    /// application's lifetime (`present_share`), for dynamic submission.
    pub fairness_present_share: f64,
    /// Time the last task ended, seconds.
    pub makespan: f64,
    /// Scheduling rounds performed.
    pub rounds: usize,
}
