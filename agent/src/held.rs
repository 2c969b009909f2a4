//! The runs this agent holds: received and not yet acknowledged by the manager (queued,
//! running, or finished with the result in flight). Heartbeats send it so the manager can
//! give back leases whose answer never reached the agent.

use hetpilot_protocol::protocol::{HeartbeatRequest, TaskAttempt};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Default)]
struct Inner {
    seen_up_to_ms: u64,
    runs: HashSet<TaskAttempt>,
}

#[derive(Clone, Default)]
pub struct Held(Arc<Mutex<Inner>>);

impl Held {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A pull answer arrived: its runs are held, and every lease up to `lease_ms` is known.
    pub fn received(&self, runs: impl IntoIterator<Item = TaskAttempt>, lease_ms: u64) {
        let mut inner = self.lock();
        inner.runs.extend(runs);
        inner.seen_up_to_ms = inner.seen_up_to_ms.max(lease_ms);
    }

    /// The manager no longer needs to hear about these runs.
    pub fn release(&self, runs: impl IntoIterator<Item = TaskAttempt>) {
        let mut inner = self.lock();
        for r in runs {
            inner.runs.remove(&r);
        }
    }

    /// How many runs are held.
    pub fn len(&self) -> usize {
        self.lock().runs.len()
    }

    pub fn heartbeat(&self) -> HeartbeatRequest {
        let inner = self.lock();
        HeartbeatRequest {
            seen_up_to_ms: inner.seen_up_to_ms,
            held: inner.runs.iter().copied().collect(),
            started: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::{AppId, TaskRef};

    #[test]
    fn runs_are_held_until_released() {
        let held = Held::default();
        let run = |i| TaskAttempt {
            task: TaskRef {
                app: AppId(1),
                index: i,
            },
            attempt: 1,
        };
        held.received([run(0), run(1)], 50);
        held.received([], 40);
        held.release([run(0)]);
        assert_eq!(held.len(), 1);
        let hb = held.heartbeat();
        assert_eq!(hb.seen_up_to_ms, 50);
        assert_eq!(hb.held, vec![run(1)]);
    }
}
