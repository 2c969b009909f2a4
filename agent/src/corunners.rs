//! Co-runner tracking: for each running task, the set of applications whose tasks shared
//! the node at any time during it. This is what per-co-runner-set profiling is built on.

use hetpilot_protocol::protocol::TaskAttempt;
use hetpilot_protocol::AppId;
use std::collections::{BTreeSet, HashMap};

#[derive(Default)]
pub struct CoRunners {
    running: HashMap<TaskAttempt, BTreeSet<AppId>>,
}

impl CoRunners {
    /// A task starts: it sees everything running now, and everything running sees it.
    pub fn start(&mut self, at: TaskAttempt) {
        let app = at.task.app;
        let mut seen = BTreeSet::new();
        for (other, set) in self.running.iter_mut() {
            set.insert(app);
            seen.insert(other.task.app);
        }
        self.running.insert(at, seen);
    }

    /// A task ends: the applications it shared the node with, sorted.
    pub fn end(&mut self, at: &TaskAttempt) -> Vec<AppId> {
        self.running
            .remove(at)
            .map(|s| s.into_iter().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::TaskRef;

    fn at(app: u64, index: u64) -> TaskAttempt {
        TaskAttempt {
            task: TaskRef {
                app: AppId(app),
                index,
            },
            attempt: 1,
        }
    }

    #[test]
    fn co_runners_include_tasks_that_started_later_and_left_earlier() {
        let mut c = CoRunners::default();
        c.start(at(1, 0));
        c.start(at(2, 0));
        assert_eq!(c.end(&at(2, 0)), vec![AppId(1)]);
        c.start(at(3, 0));
        c.start(at(1, 1));
        assert_eq!(c.end(&at(1, 0)), vec![AppId(1), AppId(2), AppId(3)]);
        assert_eq!(c.end(&at(3, 0)), vec![AppId(1)]);
        assert_eq!(c.end(&at(1, 1)), vec![AppId(1), AppId(3)]);
    }
}
