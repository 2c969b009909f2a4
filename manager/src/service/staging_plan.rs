//! Live Het-HPS staging for data-intensive applications. When such an application has
//! waiting tasks and the agent set is new to it, the manager builds the staging model from
//! live data (`staging_model`) and runs the pure planner with a seeded RNG, then binds the
//! node lists to the agents as the queues' partitions. It runs before a lease only when a
//! plan is due, never per pull, and off the async runtime (the blocking pool), with no
//! lock held while it plans.
//!
//! A plan is made with what is measured when it is made: an application's first plan uses
//! the profiles' numbers, later plans (a new agent set, a new application) the measured ones.

use super::Manager;
use crate::control::{request_files, PlannedStaging, StagingJob};
use crate::queue::{Partitions, StagingDue};
use hetpilot_protocol::files::{Source, TaskFile};
use hetpilot_protocol::AppId;
use std::collections::HashSet;

/// The staging plans being made, so concurrent pulls plan each application once and wait
/// for that plan instead of leasing before it.
#[derive(Default)]
pub(super) struct StagingInFlight {
    planning: std::sync::Mutex<HashSet<(AppId, u64)>>,
    done: tokio::sync::Notify,
}

impl Manager {
    /// Plans every data-intensive application whose partitions are missing or stale. The
    /// planning (file sizes, the Het-HPS partitioning) runs on the blocking pool, so the
    /// async runtime keeps serving heartbeats and other pulls; no lock is held meanwhile.
    pub(super) async fn plan_staging(&self) {
        loop {
            let due = self.control().queues().staging_due();
            if due.is_empty() {
                return;
            }
            let flight = &self.staging_in_flight;
            let done = flight.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            let mine: Vec<StagingDue> = {
                let mut planning = flight.planning.lock().unwrap_or_else(|p| p.into_inner());
                due.into_iter()
                    .filter(|r| planning.insert((r.app, r.generation)))
                    .collect()
            };
            if mine.is_empty() {
                // Another pull is planning them: wait for its plan.
                done.await;
                continue;
            }
            let keys: Vec<(AppId, u64)> = mine.iter().map(|r| (r.app, r.generation)).collect();
            for planned in self.plan_off_runtime(mine).await {
                let app = planned.app;
                if self.control().set_partitions(app, planned.partitions) {
                    tracing::info!(%app, "het-hps staging plan bound to agents");
                    self.metrics.staging_planned(&planned.predicted_bytes);
                }
            }
            {
                let mut planning = flight.planning.lock().unwrap_or_else(|p| p.into_inner());
                for k in &keys {
                    planning.remove(k);
                }
            }
            flight.done.notify_waiters();
        }
    }

    /// Each request's partitions: Het-HPS's plan, or first come, first served when planning
    /// fails (or its thread died).
    async fn plan_off_runtime(&self, due: Vec<StagingDue>) -> Vec<PlannedStaging> {
        // Without a plan, no partitions: the application's tasks go first come, first served.
        let fallback: Vec<PlannedStaging> = due
            .iter()
            .map(|d| PlannedStaging {
                app: d.app,
                partitions: Partitions::new(d.generation, Vec::new(), Vec::new()),
                predicted_bytes: Vec::new(),
            })
            .collect();
        let root = self.files_root();
        // Rendering each task's files and reading sizes from the disk: blocking.
        let sized = tokio::task::spawn_blocking(move || {
            due.into_iter()
                .map(StagingDue::render)
                .map(|req| {
                    let root = root.join(&req.owner);
                    let size = |f: &TaskFile| match (&f.size, &f.source) {
                        (Some(s), _) => *s,
                        (None, Source::Service(name)) => std::fs::metadata(root.join(name))
                            .map(|m| m.len())
                            .unwrap_or(0),
                        (None, _) => 0,
                    };
                    let files = request_files(&req, size);
                    (req, files)
                })
                .collect::<Vec<_>>()
        })
        .await;
        let Ok(sized) = sized else {
            return fallback;
        };
        let jobs = self.control().staging_jobs(sized);
        let started = std::time::Instant::now();
        let planned = tokio::task::spawn_blocking(move || {
            jobs.into_iter().map(StagingJob::plan).collect::<Vec<_>>()
        })
        .await;
        self.metrics.planned("het-hps", started.elapsed());
        planned.unwrap_or_else(|e| {
            tracing::error!(error = %e, "staging planning aborted; first come, first served");
            fallback
        })
    }
}
