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
        let warnings = {
            let mut control = self.control();
            let warnings = control.finish_round(done);
            control.round_took_effect(now_ms());
            warnings
        };
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

    /// Fairshare usage per user; a user sees only their own row. Priorities are relative
    /// to the users in the table, so every view computes them over the same users: the
    /// owners of known applications (and a user who owns none yet, in their own view).
    /// The admin is not a fairshare user: asking adds no row for them.
    pub fn usage(&self, who: &Principal) -> Result<Vec<UserUsage>, ServiceError> {
        let (name, admin) = user(who)?;
        let also = (!admin).then_some(name);
        let mut table = self.control().usage_table(also, now_ms());
        if !admin {
            table.retain(|u| u.user == name);
        }
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support;
    use hetpilot_protocol::spec::AppSpec;

    fn array(name: &str) -> AppSpec {
        serde_json::from_value(serde_json::json!({
            "name": name, "command": "true", "tasks": {"array": {"start": 1, "end": 3}}
        }))
        .unwrap()
    }

    /// A user's own `usage` and the admin's view give the same priority for that user,
    /// and the admin, who asks, is no fairshare user.
    #[tokio::test]
    async fn a_users_priority_is_the_same_in_their_view_and_the_admins() {
        let dir = tempfile::tempdir().unwrap();
        let (_, m, admin) = test_support::open(dir.path(), &[]);
        let alice = test_support::user(&m, &admin, "alice").await;
        let bob = test_support::user(&m, &admin, "bob").await;
        m.submit(&alice, array("a")).await.unwrap();
        m.submit(&bob, array("b")).await.unwrap();
        let seen_by_admin = m.usage(&admin).unwrap();
        let users: Vec<&str> = seen_by_admin.iter().map(|u| u.user.as_str()).collect();
        assert!(!users.contains(&"admin"), "{users:?}");
        let own = m.usage(&alice).unwrap();
        let alice_by_admin = seen_by_admin.iter().find(|u| u.user == "alice").unwrap();
        assert_eq!(own.len(), 1);
        assert_eq!(
            own[0].priority, alice_by_admin.priority,
            "{own:?} vs {seen_by_admin:?}"
        );
    }
}
