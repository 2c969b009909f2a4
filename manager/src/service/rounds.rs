//! Scheduling rounds in the live manager: on every change that matters and at least every
//! `[scheduler] interval_ms`, a round begins under the control lock, computes on the
//! blocking pool with no lock held, and finishes under the lock (see `control::round`).
//! Also the views the rounds leave behind (`hetpilot schedule`, `usage`, `bandwidths`).

use super::users::user;
use super::{now_ms, Manager, Principal, ServiceError};
use hetpilot_protocol::views::{BandwidthRow, ScheduleView, UserUsage};
use std::sync::Arc;
use std::time::Duration;

impl Manager {
    /// Something that matters changed: run a round soon, and make any Het-HPS plan due.
    pub(super) fn replan(&self) {
        self.replan.notify_one();
        self.staging_wanted();
    }

    /// Runs scheduling rounds until the manager is dropped (nothing with `round-robin`).
    pub fn spawn_scheduler(self: &Arc<Self>) {
        if !self.control().schedules() {
            return;
        }
        let weak = Arc::downgrade(self);
        let replan = self.replan.clone();
        let interval = Duration::from_millis(self.settings.scheduler.interval_ms);
        tokio::spawn(async move {
            loop {
                let Some(manager) = weak.upgrade() else { break };
                // A round is CPU work: off the async runtime, so pulls and heartbeats are
                // served meanwhile.
                let round = tokio::task::spawn_blocking(move || manager.schedule_round());
                if let Err(e) = round.await {
                    tracing::error!(error = %e, "scheduling round aborted");
                }
                let _ = tokio::time::timeout(interval, replan.notified()).await;
            }
        });
    }

    /// One round: the live state in, a new lease plan out. It computes on copies, with no
    /// lock held, so reports and reads never wait behind it.
    pub fn schedule_round(&self) {
        let unavailable = self.unavailable_platforms();
        let Some(job) = self.control().begin_round(&unavailable, now_ms()) else {
            return; // a round is already running, or no scheduler
        };
        let started = std::time::Instant::now();
        let mut step_started = started;
        let done = job.run_observed(&mut |step| {
            let now = std::time::Instant::now();
            self.metrics.planned(step.label(), now - step_started);
            step_started = now;
        });
        self.metrics.planned("round", started.elapsed());
        let warnings = self.control().finish_round(done);
        if let Some(e) = warnings.round {
            tracing::warn!(error = %e, "scheduling round failed; leases keep the previous plan");
        }
        if let Some(e) = warnings.demand {
            tracing::warn!(error = %e, "provisioning round failed; pilots follow the last demand");
        }
    }

    /// The last round's allocation; a user sees only their own applications.
    pub fn schedule(&self, who: &Principal) -> Result<ScheduleView, ServiceError> {
        let (name, admin) = user(who)?;
        let mut view = self.control().schedule_view().clone();
        if !admin {
            view.apps.retain(|a| a.owner == name);
        }
        Ok(view)
    }

    /// Measured transfer bandwidths per platform × endpoint (any user: they describe
    /// platforms, not anyone's applications).
    pub fn bandwidths(&self, who: &Principal) -> Result<Vec<BandwidthRow>, ServiceError> {
        user(who)?;
        Ok(self.control().bandwidth_rows())
    }

    /// Fairshare usage per user; a user sees only their own row.
    pub fn usage(&self, who: &Principal) -> Result<Vec<UserUsage>, ServiceError> {
        let (name, admin) = user(who)?;
        let mut table = self.control().usage_table(name, now_ms());
        if !admin {
            table.retain(|u| u.user == name);
        }
        Ok(table)
    }
}
