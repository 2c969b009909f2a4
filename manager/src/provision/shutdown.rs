//! What a manager stopping cleanly does with its pilots. [`Provisioning`] is the handle
//! `provisioner::start` returns: [`Provisioning::shutdown`] stops the per-platform loops
//! (each finishes the cycle it is in, so a job just submitted is recorded) and, with
//! `[provision] cancel_on_shutdown` (the default), cancels every pilot still queued or
//! running through its batch system (`scancel`, `qdel`, `llcancel`, or SIGTERM to an
//! ssh/local agent's process group) and records it `cancelled` ("the manager shut down");
//! a pilot whose cancel failed keeps its record, so a restarted manager follows it.
//! A pilot left behind would otherwise start or keep running, hold its allocation and
//! wait for a manager that is not coming back until its agent's `--give-up-secs`.
//! A manager that is killed (SIGKILL, a crash) does none of this; its pilots' agents ride
//! out a restart within their window, and give up after it.

use super::host::PilotHost;
use super::provisioner::ManagedPlatform;
use hetpilot_protocol::pilots::PilotState;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long a stopping manager waits for a platform's loop to finish its cycle.
const LOOP_GRACE: Duration = Duration::from_secs(30);

/// The reason recorded on pilots cancelled at shutdown.
pub const SHUTDOWN_REASON: &str = "the manager shut down";

/// The running provisioner: its platforms and their loops.
pub struct Provisioning {
    pub(super) platforms: Vec<Arc<ManagedPlatform>>,
    pub(super) stop: watch::Sender<bool>,
    pub(super) loops: Vec<JoinHandle<()>>,
}

impl Provisioning {
    /// Stops the loops; then, if `cancel`, cancels the pilots of every platform that are
    /// still queued or running. Returns how many were cancelled.
    pub async fn shutdown<H: PilotHost>(self, manager: &Arc<H>, cancel: bool) -> usize {
        let _ = self.stop.send(true);
        for handle in self.loops {
            if tokio::time::timeout(LOOP_GRACE, handle).await.is_err() {
                tracing::warn!("a provisioning loop did not stop within {LOOP_GRACE:?}");
            }
        }
        if !cancel {
            return 0;
        }
        let mut cancels = tokio::task::JoinSet::new();
        for platform in &self.platforms {
            for pilot in manager.tracked_pilots(&platform.profile.name) {
                let live = matches!(pilot.state, PilotState::Queued | PilotState::Running);
                let Some(job) = pilot.batch_job_id.clone().filter(|_| live) else {
                    continue;
                };
                let platform = platform.clone();
                cancels.spawn_blocking(move || {
                    let job = super::adapter::BatchJobId(job);
                    let done =
                        platform
                            .adapter
                            .cancel(platform.runner.as_ref(), &platform.profile, &job);
                    (platform.profile.name.clone(), pilot, done)
                });
            }
        }
        let mut cancelled = 0;
        while let Some(joined) = cancels.join_next().await {
            match joined {
                Ok((platform, pilot, Ok(()))) => {
                    cancelled += 1;
                    let cancelled = crate::control::PilotEvent::Moved {
                        pilot: pilot.name.clone(),
                        from: pilot.state,
                        to: PilotState::Cancelled,
                        reason: SHUTDOWN_REASON.into(),
                    };
                    manager.pilot_event(cancelled, crate::clock::now_ms());
                    tracing::info!(%platform, pilot = %pilot.name, "pilot cancelled: {SHUTDOWN_REASON}");
                }
                // Left as it was: a restarted manager keeps following it.
                Ok((platform, pilot, Err(e))) => {
                    tracing::warn!(%platform, pilot = %pilot.name, error = %e, "cancelling failed");
                }
                Err(e) => tracing::warn!(error = %e, "cancelling a pilot aborted"),
            }
        }
        // Recorded before the manager exits, so a restarted one does not follow these jobs.
        manager.flush().await;
        cancelled
    }
}
