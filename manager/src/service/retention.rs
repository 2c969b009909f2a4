//! Forgetting ended applications: one at a time by its owner or an admin
//! (`hetpilot app forget`), every one that ended long enough ago (`hetpilot purge`, admin),
//! and the periodic sweep of `[retention]`. Each application leaves the control plane and
//! its removal is queued for the store under the control lock, so it lands after every
//! change made to it and a restart never brings it back.

use super::control_lock::ControlGuard;
use super::users::{admin, user};
use super::{Manager, Principal, ServiceError};
use crate::control::Forgotten;
use crate::db::{Queued, Write};
use hetpilot_protocol::protocol::{ForgetSummary, PurgeRequest};
use hetpilot_protocol::AppId;
use std::sync::Arc;

/// Applications forgotten under one hold of the control lock.
const APPS_PER_LOCK: usize = 1024;
/// The oldest age `purge` takes: 100 years, in seconds.
const MAX_PURGE_AGE_SECS: u64 = 100 * 365 * 24 * 3600;

impl Manager {
    /// Forgets one ended application of the caller (any, for an admin); another user's
    /// looks missing, like elsewhere. Committed before this returns.
    pub async fn forget_app(
        &self,
        who: &Principal,
        app: AppId,
    ) -> Result<ForgetSummary, ServiceError> {
        let (name, is_admin) = user(who)?;
        let (summary, stored) = {
            let mut control = self.control();
            match control.queues().app(app) {
                Some(a) if is_admin || a.owner == name => {}
                _ => return Err(ServiceError::NotFound(format!("no application {app}"))),
            }
            let forgotten = control.forget(app)?;
            let summary = ForgetSummary {
                apps: 1,
                tasks: forgotten.tasks,
            };
            (summary, self.store_forgotten(&control, vec![forgotten]))
        };
        stored.await?;
        self.remove_outputs(vec![app]).await;
        tracing::info!(%app, tasks = summary.tasks, by = name, "application forgotten");
        Ok(summary)
    }

    /// Forgets every application that ended at least `older_than_secs` ago (admin).
    pub async fn purge(
        &self,
        who: &Principal,
        req: PurgeRequest,
    ) -> Result<ForgetSummary, ServiceError> {
        let by = admin(who)?.to_string();
        if req.older_than_secs > MAX_PURGE_AGE_SECS {
            return Err(ServiceError::BadRequest(format!(
                "field `older_than_secs`: {} is more than {MAX_PURGE_AGE_SECS} (100 years)",
                req.older_than_secs
            )));
        }
        let cutoff = super::now_ms().saturating_sub(req.older_than_secs * 1000);
        let done = self.forget_ended_by(cutoff).await?;
        tracing::info!(
            apps = done.apps,
            tasks = done.tasks,
            by,
            "ended applications purged"
        );
        Ok(done)
    }

    /// Runs the `[retention]` sweep until the manager is dropped.
    pub fn spawn_retention(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let period = self.settings.retention.sweep_period();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(manager) = weak.upgrade() else { break };
                if let Err(e) = manager.sweep_retention(super::now_ms()).await {
                    tracing::error!(error = %e, "the retention sweep failed; it runs again later");
                }
            }
        });
    }

    /// One `[retention]` sweep as of `now_ms`: forgets the applications that ended more
    /// than `ended_app_days` before.
    pub async fn sweep_retention(&self, now_ms: u64) -> Result<ForgetSummary, ServiceError> {
        let cutoff = now_ms.saturating_sub(self.settings.retention.ended_app_age_ms());
        let done = self.forget_ended_by(cutoff).await?;
        if done.apps > 0 {
            tracing::info!(
                apps = done.apps,
                tasks = done.tasks,
                "applications past the retention forgotten"
            );
        }
        Ok(done)
    }

    /// Forgets every application that ended at or before `cutoff_ms`, a bounded number
    /// per hold of the control lock.
    async fn forget_ended_by(&self, cutoff_ms: u64) -> Result<ForgetSummary, ServiceError> {
        let due = self.control().queues().ended_by(cutoff_ms);
        let mut total = ForgetSummary::default();
        let mut apps = Vec::new();
        for chunk in due.chunks(APPS_PER_LOCK) {
            let stored = {
                let mut control = self.control();
                // One forgotten meanwhile (by its owner) is simply skipped.
                let forgotten: Vec<Forgotten> = control
                    .forget_all(chunk)
                    .into_iter()
                    .filter_map(Result::ok)
                    .collect();
                total.apps += forgotten.len() as u64;
                apps.extend(forgotten.iter().map(|f| f.app));
                total.tasks = forgotten
                    .iter()
                    .fold(total.tasks, |n, f| n.saturating_add(f.tasks));
                self.store_forgotten(&control, forgotten)
            };
            stored.await?;
            self.remove_outputs(std::mem::take(&mut apps)).await;
        }
        Ok(total)
    }

    /// Queues the removal of `forgotten` from the store, in order with every change
    /// queued under the same lock before.
    fn store_forgotten(&self, control: &ControlGuard<'_>, forgotten: Vec<Forgotten>) -> Queued {
        if forgotten.is_empty() {
            return Queued::Nothing;
        }
        let apps = forgotten.iter().map(|f| f.app).collect();
        let carried = forgotten.into_iter().filter_map(|f| f.carried).collect();
        self.writer.queue(Write::Forget {
            apps,
            carried,
            half_life: control.usage_half_life(),
        })
    }
}
