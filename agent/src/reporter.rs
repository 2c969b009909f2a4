//! The reporter sends results in batches, in order, and never drops one the manager has
//! not acknowledged: it retries while the manager is unreachable (a restart), and when a
//! batch is refused it retries its results one by one so one bad result cannot sink others.
//! Once the manager has been silent for longer than the agent waits, it stops sending and
//! counts what it could not report.

use crate::api::{Api, ApiError};
use crate::executor::Demand;
use crate::held::Held;
use hetpilot_protocol::protocol::{ReportRequest, ReportResponse, TaskAttempt, TaskResult};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

const MAX_BATCH: usize = 1000;
/// Longest a result waits for others to share its report, while other runs of this agent
/// are still going (an agent with nothing else to run reports at once: nobody would share
/// the report, and someone may be waiting for it). Each report is a transaction on the
/// manager; at 50 ms (against 10) the manager's CPU per short task fell from about 0.08 to
/// 0.045 ms at 2 slots, and a result is still recorded well within a heartbeat.
const LINGER: Duration = Duration::from_millis(50);
const TIMEOUT: Duration = Duration::from_secs(60);

/// What became of the results an agent sent.
#[derive(Debug, Default)]
pub struct Reported {
    /// Recorded by the manager (or already recorded: a resend).
    pub recorded: u64,
    /// Refused by the manager, one by one.
    pub refused: u64,
    /// Never delivered: the manager stopped answering for good.
    pub unreported: u64,
}

/// Sends everything received until the channel closes.
pub async fn run(
    api: Api,
    path: String,
    held: Held,
    demand: watch::Receiver<Demand>,
    mut results: mpsc::UnboundedReceiver<TaskResult>,
) -> Reported {
    let mut out = Reported::default();
    let mut silent = false;
    while let Some(first) = results.recv().await {
        // Linger briefly so a burst of short tasks shares one request.
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + LINGER;
        while batch.len() < MAX_BATCH {
            // Every run this agent holds is in the batch: no other result is coming.
            if held.len() <= batch.len() {
                break;
            }
            match tokio::time::timeout_at(deadline, results.recv()).await {
                Ok(Some(r)) => batch.push(r),
                _ => break,
            }
        }
        let runs: Vec<TaskAttempt> = batch
            .iter()
            .map(|r| TaskAttempt {
                task: r.task,
                attempt: r.attempt,
            })
            .collect();
        if silent {
            out.unreported += runs.len() as u64;
            held.release(runs);
            continue;
        }
        let span = tracing::info_span!("report", results = batch.len());
        let wanted = wanted(&demand);
        match send(&api, &path, batch.clone(), wanted)
            .instrument(span)
            .await
        {
            Ok(n) => {
                out.recorded += n;
                held.release(runs);
            }
            Err(e @ ApiError::Silent { .. }) => {
                tracing::error!(error = %e, results = runs.len(), "results not reported");
                silent = true;
                out.unreported += runs.len() as u64;
                held.release(runs);
            }
            Err(e) => {
                tracing::warn!(error = %e, results = batch.len(), "report refused; retrying results one by one");
                for (r, run) in batch.into_iter().zip(runs) {
                    match send(&api, &path, vec![r], wanted).await {
                        Ok(n) => out.recorded += n,
                        Err(e) => {
                            out.refused += 1;
                            tracing::error!(task = %run.task, error = %e, "result refused by the manager; dropped");
                        }
                    }
                    held.release([run]);
                }
            }
        }
    }
    out
}

/// What the agent wants now, for a report: its pull in flight may ask for less (none
/// while draining).
fn wanted(demand: &watch::Receiver<Demand>) -> Option<u32> {
    let d = *demand.borrow();
    (!d.draining).then_some(d.want)
}

/// Sends one batch, retrying while the manager is unreachable; Err for a refusal, or once
/// the manager has been silent for longer than the agent waits.
async fn send(
    api: &Api,
    path: &str,
    results: Vec<TaskResult>,
    wanted: Option<u32>,
) -> Result<u64, ApiError> {
    let body = ReportRequest { results, wanted };
    let mut backoff = Duration::from_millis(100);
    loop {
        match api.post::<_, ReportResponse>(path, &body, TIMEOUT).await {
            Ok(r) => return Ok(u64::from(r.recorded) + u64::from(r.duplicates)),
            Err(e) if e.is_transient() => {
                tracing::warn!(error = %e, "manager unreachable; will resend results");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
            Err(e) => return Err(e),
        }
    }
}
