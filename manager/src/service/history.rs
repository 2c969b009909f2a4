//! The recent past the dashboard charts (`GET /v1/history`): every
//! `[metrics] history_interval_ms` the manager samples the fairness of the allocation and
//! each running application's ended tasks, and keeps the last [`SAMPLES`], so a page
//! opened late still shows throughput and fairness over time.

use super::users::user;
use super::{now_ms, Manager, Principal, ServiceError};
use hetpilot_protocol::dashboard::{AppEnded, History, HistorySample};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Samples kept: two hours at the default interval.
pub const SAMPLES: usize = 720;
/// Applications a sample records at most (the newest ones).
const APPS_PER_SAMPLE: usize = 200;

/// A sample with the owner of each application, to answer each user with their own.
struct Kept {
    at_ms: u64,
    fairness: Option<f64>,
    done: Vec<(AppEnded, String)>,
}

/// The samples, oldest first.
#[derive(Default)]
pub struct HistoryRing(Mutex<VecDeque<Kept>>);

impl HistoryRing {
    fn push(&self, kept: Kept) {
        let mut ring = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if ring.len() == SAMPLES {
            ring.pop_front();
        }
        ring.push_back(kept);
    }
}

impl Manager {
    /// Samples the history until the manager is dropped.
    pub fn spawn_history(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let every = self.settings.metrics.history_interval();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(manager) = weak.upgrade() else { break };
                manager.sample_history().await;
            }
        });
    }

    async fn sample_history(&self) {
        let (job, mut done) = {
            let control = self.control();
            let done: Vec<(u64, AppEnded, String)> = control
                .queues()
                .apps()
                .filter(|a| !a.cancelled && a.counts.finished() < a.counts.total())
                .map(|a| {
                    let done = AppEnded {
                        app: a.id,
                        ended: a.counts.done + a.counts.failed,
                    };
                    (a.submitted_ms, done, a.owner.clone())
                })
                .collect();
            (control.affinity_job(), done)
        };
        // The newest applications, when there are very many.
        done.sort_unstable_by_key(|(submitted, d, _)| std::cmp::Reverse((*submitted, d.app)));
        done.truncate(APPS_PER_SAMPLE);
        let fairness = match tokio::task::spawn_blocking(move || job.compute()).await {
            Ok(Ok(view)) => view.fairness,
            _ => None,
        };
        self.history.push(Kept {
            at_ms: now_ms(),
            fairness,
            done: done.into_iter().map(|(_, d, owner)| (d, owner)).collect(),
        });
    }

    /// The kept samples; a user sees only their own applications' progress.
    pub fn history(&self, who: &Principal) -> Result<History, ServiceError> {
        let (name, admin) = user(who)?;
        let ring = self.history.0.lock().unwrap_or_else(|p| p.into_inner());
        let samples = ring
            .iter()
            .map(|k| HistorySample {
                at_ms: k.at_ms,
                fairness: k.fairness,
                apps: k
                    .done
                    .iter()
                    .filter(|(_, owner)| admin || owner == name)
                    .map(|(d, _)| d.clone())
                    .collect(),
            })
            .collect();
        Ok(History {
            interval_ms: u64::try_from(self.settings.metrics.history_interval().as_millis())
                .unwrap_or(u64::MAX),
            samples,
        })
    }
}
