//! Ended applications leave the control plane: when an application ends is noted (so a
//! retention policy can tell its age), and forgetting one drops it from the queues and
//! from the per-application profiles, while its owner's fairshare usage stays.

use super::journal::Input;
use super::{CarriedUsage, Control};
use crate::queue::{Change, ForgetError};
use hetpilot_protocol::AppId;
use std::collections::HashSet;

/// What forgetting an application removed.
#[derive(Debug, Clone, PartialEq)]
pub struct Forgotten {
    /// The application.
    pub app: AppId,
    /// Its owner.
    pub owner: String,
    /// Its tasks.
    pub tasks: u64,
    /// What its runs cost its owner, to keep once its runs leave the store (`None`:
    /// nothing was charged).
    pub carried: Option<CarriedUsage>,
}

impl Control {
    /// Forgets an ended application: it leaves the queues and the per-application
    /// profiles; its owner's usage, the platforms' speeds already learned and the measured
    /// bandwidths stay. Results still coming for its tasks are refused as unknown.
    pub fn forget(&mut self, app: AppId) -> Result<Forgotten, ForgetError> {
        self.forget_all(&[app])
            .pop()
            .expect("one result per application")
    }

    /// [`Self::forget`] for each of `apps`, in one pass over the agents and profiles.
    pub fn forget_all(&mut self, apps: &[AppId]) -> Vec<Result<Forgotten, ForgetError>> {
        let mut gone = HashSet::new();
        let mut results = Vec::with_capacity(apps.len());
        for &app in apps {
            self.journal.input(|| Input::Forget { app });
            results.push(self.queues.forget(app).map(|entry| {
                gone.insert(app);
                Forgotten {
                    app,
                    owner: entry.owner,
                    tasks: entry.counts.total(),
                    carried: self.policy.usage.forget(app),
                }
            }));
        }
        if !gone.is_empty() {
            // Whoever waits on a forgotten application hears it is gone.
            self.effects.wake.progress = true;
            self.queues.forget_sent(&gone);
            self.policy.stats.forget(&gone);
        }
        results
    }

    /// The half-life fairshare charges decay with, seconds (None: no decay); carried
    /// usage is merged with it.
    pub fn usage_half_life(&self) -> Option<f64> {
        self.policy.usage.half_life()
    }

    /// Adds `changes` to the effects (see [`Control::changed`]) with, for each application
    /// they ended, the change saying so; returns how many changes that made.
    pub(super) fn ended(&mut self, mut changes: Vec<Change>, now_ms: u64) -> usize {
        let mut touched: Vec<AppId> = changes
            .iter()
            .filter_map(|c| match c {
                Change::TaskState { task, state, .. } if state.is_final() => Some(task.app),
                Change::AppCancelled { app } => Some(*app),
                _ => None,
            })
            .collect();
        touched.sort_unstable();
        touched.dedup();
        for app in touched {
            if self.queues.mark_ended(app, now_ms) {
                changes.push(Change::AppEnded { app, now_ms });
            }
        }
        self.changed(changes)
    }
}
