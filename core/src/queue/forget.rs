//! The end of an application's life in the queues: noting when it ended, and forgetting it
//! once ended, so that what users submit and cancel does not stay in memory for ever.

use super::app::AppEntry;
use super::queues::Queues;
use hetpilot_protocol::AppId;
use std::collections::HashSet;
use thiserror::Error;

/// Why an application cannot be forgotten.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ForgetError {
    /// No such application (never submitted, or already forgotten).
    #[error("no application {0}")]
    Unknown(AppId),
    /// It still has tasks waiting or running.
    #[error(
        "application {app} still has {unfinished} tasks waiting or running; cancel it first \
         (`hetpilot cancel {app}`) or wait for it to finish"
    )]
    Live {
        /// The application.
        app: AppId,
        /// Its tasks not ended yet.
        unfinished: u64,
    },
}

/// The tasks one user has in the queues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OwnerTasks {
    /// Waiting, leased or running, in applications not cancelled.
    pub queued: u64,
    /// Every task kept, ended or not.
    pub stored: u64,
}

impl Queues {
    /// Notes that `app` ended at `now_ms` if it just did; true when it did.
    pub(crate) fn mark_ended(&mut self, app: AppId, now_ms: u64) -> bool {
        match self.apps.get_mut(&app) {
            Some(a) if a.ended_ms.is_none() && a.has_ended() => {
                a.ended_ms = Some(now_ms);
                true
            }
            _ => false,
        }
    }

    /// Removes an ended application and what the queues keep about it, but for the
    /// agents' records of it ([`Self::forget_sent`], once for many applications). Leases
    /// agents still hold of its (cancelled) tasks stay counted against their slots until
    /// they report or reconcile them; the kills already asked for stand.
    pub(crate) fn forget(&mut self, app: AppId) -> Result<AppEntry, ForgetError> {
        let entry = self.apps.get(&app).ok_or(ForgetError::Unknown(app))?;
        if !entry.has_ended() {
            let c = entry.counts;
            return Err(ForgetError::Live {
                app,
                unfinished: c.total() - c.finished(),
            });
        }
        let entry = self.apps.remove(&app).expect("looked up above");
        self.partitions.remove(&app);
        self.parallel.remove(&app);
        self.reservations.forget(app);
        self.estimates.forget(app);
        self.explored.retain(|(a, _), _| *a != app);
        Ok(entry)
    }

    /// Forgets that agents were sent the runtimes of `apps` (forgotten applications).
    pub(crate) fn forget_sent(&mut self, apps: &HashSet<AppId>) {
        for agent in self.agents.values_mut() {
            agent.sent_apps.retain(|a| !apps.contains(a));
        }
    }

    /// The applications that ended at or before `cutoff_ms`, by id.
    pub fn ended_by(&self, cutoff_ms: u64) -> Vec<AppId> {
        self.apps
            .values()
            .filter(|a| a.ended_ms.is_some_and(|t| t <= cutoff_ms))
            .map(|a| a.id)
            .collect()
    }

    /// The tasks `owner` has queued and stored.
    pub fn owner_tasks(&self, owner: &str) -> OwnerTasks {
        let mut tasks = OwnerTasks::default();
        for a in self.apps.values().filter(|a| a.owner == owner) {
            tasks.stored = tasks.stored.saturating_add(a.counts.total());
            if !a.cancelled {
                let c = a.counts;
                tasks.queued = tasks
                    .queued
                    .saturating_add(c.waiting + c.leased + c.running);
            }
        }
        tasks
    }
}
