//! The outcome of placing rigid parallel jobs on clusters and its summary metrics (the TLPA
//! paper's turnaround, wait, bounded slowdown, utilisation, makespan), the same for any
//! schedule: the live control plane's replay of a trace (`control::simulation`) and the
//! research simulators report through them.

use crate::alloc::{Cluster, Job};

/// Bounded slowdown threshold τ (seconds): slowdown = max(1, turnaround / max(runtime, τ)).
pub const BOUNDED_SLOWDOWN_TAU: f64 = 10.0;

/// What happened to one job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobOutcome {
    /// Index of the cluster it ran on.
    pub cluster: usize,
    /// When it started, seconds on the trace's clock.
    pub start: f64,
    /// When it ended (start + runtime / speed), seconds on the trace's clock.
    pub end: f64,
}

/// Summary metrics of a run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AllocMetrics {
    /// Jobs simulated.
    pub jobs: usize,
    /// ATT, eq. 1 of the TLPA paper: mean of end − submit.
    pub avg_turnaround: f64,
    /// Mean of start − submit, seconds.
    pub avg_wait: f64,
    /// Mean bounded slowdown: max(1, turnaround / max(run time, τ = 10 s)).
    pub avg_bounded_slowdown: f64,
    /// Busy processor-seconds / (all processors × (last end − first submit)).
    pub utilization: f64,
    /// Last end − first submit.
    pub makespan: f64,
    /// Allocation decisions (one per job).
    pub decisions: usize,
    /// Decisions with more than one allocable cluster (where TLPA simulates).
    pub contested_decisions: usize,
    /// Longest the waiting queue grew, jobs.
    pub max_queue: usize,
}

impl AllocMetrics {
    /// The figures a comparison of two runs prints, in order, each with its name and unit:
    /// turnaround, wait, bounded slowdown, utilisation, makespan.
    pub fn figures(&self) -> [(&'static str, f64); 5] {
        [
            ("average turnaround (s)", self.avg_turnaround),
            ("average wait (s)", self.avg_wait),
            ("avg bounded slowdown", self.avg_bounded_slowdown),
            ("utilization", self.utilization),
            ("makespan (s)", self.makespan),
        ]
    }
}

/// Outcomes per job (same order as the input jobs) and metrics.
#[derive(Debug, Clone)]
pub struct AllocRun {
    /// One outcome per input job, in input order.
    pub outcomes: Vec<JobOutcome>,
    /// The run's summary.
    pub metrics: AllocMetrics,
}

/// The metrics of a schedule made elsewhere (`outcomes`, one per job of `jobs`, as
/// the alloc simulator gives them), so that it compares with the simulator's: the
/// turnaround, wait, slowdown, utilisation and makespan; one decision per job, the rest 0.
pub fn metrics_of(clusters: &[Cluster], jobs: &[Job], outcomes: &[JobOutcome]) -> AllocMetrics {
    let mut metrics = AllocMetrics {
        jobs: jobs.len(),
        decisions: jobs.len(),
        ..AllocMetrics::default()
    };
    summarize(clusters, jobs, outcomes, &mut metrics);
    metrics
}

fn summarize(clusters: &[Cluster], jobs: &[Job], outcomes: &[JobOutcome], m: &mut AllocMetrics) {
    if jobs.is_empty() {
        return;
    }
    let n = jobs.len() as f64;
    let (mut turnaround, mut wait, mut bsld, mut busy) = (0.0, 0.0, 0.0, 0.0);
    let mut first_submit = f64::INFINITY;
    let mut last_end = f64::NEG_INFINITY;
    for (job, o) in jobs.iter().zip(outcomes) {
        let run = o.end - o.start;
        turnaround += o.end - job.submit;
        wait += o.start - job.submit;
        bsld += ((o.end - job.submit) / run.max(BOUNDED_SLOWDOWN_TAU)).max(1.0);
        busy += f64::from(job.procs) * run;
        first_submit = first_submit.min(job.submit);
        last_end = last_end.max(o.end);
    }
    let procs: f64 = clusters.iter().map(|c| f64::from(c.procs)).sum();
    m.avg_turnaround = turnaround / n;
    m.avg_wait = wait / n;
    m.avg_bounded_slowdown = bsld / n;
    m.makespan = last_end - first_submit;
    m.utilization = if m.makespan > 0.0 {
        busy / (procs * m.makespan)
    } else {
        0.0
    };
}
