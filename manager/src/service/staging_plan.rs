//! Live Het-HPS staging for data-intensive applications. When such an application has
//! waiting tasks and the agent set is new to it, the manager builds the staging model from
//! live data (`staging_model`) and runs the pure planner with a seeded RNG, then binds the
//! node lists to the agents as the queues' partitions.
//!
//! Planning is off the request path: one background task (`spawn_staging_planner`), woken
//! with the scheduling rounds (`Manager::replan`: a submission, an agent registered, left or
//! was lost) and at least every second, makes the plans that are due on the blocking pool
//! with no lock held, and installs each one under the control lock in one step. Pulls never
//! wait for a plan: meanwhile agents lease by the plan in place (an earlier agent set's,
//! whose lists of departed agents went to the pool) or, with none, first come, first served.
//! A data-intensive submission does not wake the idle agents at once: binding its plan
//! does (or, if the plan is late, a deadline: `control::wake`), and an agent that pulls
//! before then leases unplanned.
//!
//! A plan is made with what is measured when it is made: an application's first plan uses
//! the profiles' numbers, later plans (a new agent set, a new application) the measured ones.

use super::Manager;
use crate::control::{request_files, PlannedStaging, StagingJob};
use crate::queue::{Partitions, StagingDue};
use hetpilot_protocol::files::{Source, TaskFile};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// How often the planner looks for due plans when nothing woke it.
const BACKSTOP: Duration = Duration::from_secs(1);

/// What the background planner is doing, for tests and the benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StagingStatus {
    /// Applications whose plan is being made now.
    pub planning: usize,
    /// Plans installed since the manager started.
    pub installed: u64,
}

/// The background planner's wake-up and its published status.
pub(super) struct StagingPlanner {
    wanted: Arc<Notify>,
    status: watch::Sender<StagingStatus>,
    /// Held by a test to keep a plan "in progress" for as long as it needs.
    #[cfg(test)]
    pub(super) gate: Arc<tokio::sync::Mutex<()>>,
}

impl StagingPlanner {
    /// What wakes the planner.
    pub(super) fn wanted(&self) -> &Notify {
        &self.wanted
    }
}

impl Default for StagingPlanner {
    fn default() -> Self {
        StagingPlanner {
            wanted: Arc::new(Notify::new()),
            status: watch::Sender::new(StagingStatus::default()),
            #[cfg(test)]
            gate: Default::default(),
        }
    }
}

impl Manager {
    /// Something that may make a plan due changed: look soon.
    /// The background planner's status, as it changes.
    pub fn staging_status(&self) -> watch::Receiver<StagingStatus> {
        self.staging_planner.status.subscribe()
    }

    /// Makes the due Het-HPS plans until the manager is dropped (see the module doc).
    pub fn spawn_staging_planner(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let wanted = self.staging_planner.wanted.clone();
        tokio::spawn(async move {
            loop {
                let Some(manager) = weak.upgrade() else { break };
                manager.plan_staging().await;
                drop(manager);
                let _ = tokio::time::timeout(BACKSTOP, wanted.notified()).await;
            }
        });
    }

    /// Plans every data-intensive application whose partitions are missing or stale, and
    /// installs the plans still current when they are ready. The planning (file sizes, the
    /// Het-HPS partitioning) runs on the blocking pool, so the async runtime keeps serving
    /// pulls, heartbeats and reports; no lock is held meanwhile.
    async fn plan_staging(&self) {
        loop {
            let due = self.control().queues().staging_due();
            if due.is_empty() {
                return;
            }
            let planning = due.len();
            self.staging_planner
                .status
                .send_modify(|s| s.planning = planning);
            let mut installed = 0;
            for planned in self.plan_off_runtime(due).await {
                let app = planned.app;
                if self.control().set_partitions(app, planned.partitions) {
                    tracing::info!(%app, "het-hps staging plan bound to agents");
                    self.metrics.staging_planned(&planned.predicted_bytes);
                    installed += 1;
                }
            }
            self.staging_planner.status.send_modify(|s| {
                s.planning = 0;
                s.installed += installed;
            });
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
        #[cfg(test)]
        let gate = self.staging_planner.gate.clone();
        let planned = tokio::task::spawn_blocking(move || {
            #[cfg(test)]
            drop(gate.blocking_lock());
            let (thread, process) = (
                cpu_seconds(CpuClock::Thread),
                cpu_seconds(CpuClock::Process),
            );
            let planned = jobs.into_iter().map(StagingJob::plan).collect::<Vec<_>>();
            let cpu = (
                cpu_seconds(CpuClock::Thread) - thread,
                cpu_seconds(CpuClock::Process) - process,
            );
            (planned, cpu)
        })
        .await;
        let wall = started.elapsed();
        self.metrics.planned("het-hps", wall);
        planned
            .map(|(planned, (thread_cpu, process_cpu))| {
                tracing::info!(
                    plans = planned.len(),
                    wall_s = wall.as_secs_f64(),
                    thread_cpu_s = thread_cpu,
                    process_cpu_s = process_cpu,
                    "het-hps plans made (CPU: the planning thread; the whole manager meanwhile)"
                );
                planned
            })
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "staging planning aborted; first come, first served");
                fallback
            })
    }
}

/// A CPU-time clock of this process.
#[derive(Clone, Copy)]
enum CpuClock {
    /// The calling thread's.
    Thread,
    /// All threads'.
    Process,
}

/// CPU seconds used so far by `clock` (0 if the clock cannot be read).
fn cpu_seconds(clock: CpuClock) -> f64 {
    let id = match clock {
        CpuClock::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
        CpuClock::Process => libc::CLOCK_PROCESS_CPUTIME_ID,
    };
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
#[path = "staging_plan_tests.rs"]
mod tests;
