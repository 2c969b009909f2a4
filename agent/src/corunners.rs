//! Co-runner tracking: for each running task, the set of applications whose tasks shared
//! the node at any time during it, and, for a task granted a fraction of a GPU, the set of
//! applications whose tasks held a fraction of the same device at any time during it (its
//! device co-runners). This is what per-co-runner-set profiling is built on.

use hetpilot_protocol::protocol::TaskAttempt;
use hetpilot_protocol::resources::ResourceGrant;
use hetpilot_protocol::AppId;
use std::collections::{BTreeSet, HashMap};

/// What one running task has seen so far.
struct Seen {
    /// The devices it holds a fraction of, by index.
    shared_devices: Vec<u32>,
    node: BTreeSet<AppId>,
    device: BTreeSet<AppId>,
}

/// The co-runners of one ended task, each list sorted.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ended {
    pub node: Vec<AppId>,
    pub device: Vec<AppId>,
}

#[derive(Default)]
pub struct CoRunners {
    running: HashMap<TaskAttempt, Seen>,
}

impl CoRunners {
    /// A task granted `grant` starts: it sees everything running now, and everything
    /// running sees it; tasks holding fractions of a common device see each other as
    /// device co-runners too.
    pub fn start(&mut self, at: TaskAttempt, grant: &ResourceGrant) {
        let app = at.task.app;
        let shared_devices: Vec<u32> = grant.fractional_gpus().collect();
        let mut node = BTreeSet::new();
        let mut device = BTreeSet::new();
        for (other, seen) in self.running.iter_mut() {
            seen.node.insert(app);
            node.insert(other.task.app);
            if seen
                .shared_devices
                .iter()
                .any(|d| shared_devices.contains(d))
            {
                seen.device.insert(app);
                device.insert(other.task.app);
            }
        }
        self.running.insert(
            at,
            Seen {
                shared_devices,
                node,
                device,
            },
        );
    }

    /// A task ends: the applications it shared the node and its device with.
    pub fn end(&mut self, at: &TaskAttempt) -> Ended {
        self.running
            .remove(at)
            .map(|s| Ended {
                node: s.node.into_iter().collect(),
                device: s.device.into_iter().collect(),
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::resources::{GpuShare, ResourceAmount};
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

    /// A grant of `amount` of device `index`.
    fn gpu(index: u32, amount: f64) -> ResourceGrant {
        ResourceGrant {
            gpus: vec![GpuShare {
                index,
                uuid: format!("GPU-{index}"),
                amount: ResourceAmount::parse(amount).unwrap(),
            }],
            ..Default::default()
        }
    }

    fn none() -> ResourceGrant {
        ResourceGrant::default()
    }

    #[test]
    fn co_runners_include_tasks_that_started_later_and_left_earlier() {
        let mut c = CoRunners::default();
        c.start(at(1, 0), &none());
        c.start(at(2, 0), &none());
        assert_eq!(c.end(&at(2, 0)).node, vec![AppId(1)]);
        c.start(at(3, 0), &none());
        c.start(at(1, 1), &none());
        assert_eq!(c.end(&at(1, 0)).node, vec![AppId(1), AppId(2), AppId(3)]);
        assert_eq!(c.end(&at(3, 0)).node, vec![AppId(1)]);
        assert_eq!(c.end(&at(1, 1)).node, vec![AppId(1), AppId(3)]);
    }

    #[test]
    fn device_co_runners_are_the_fractions_of_the_same_device() {
        let mut c = CoRunners::default();
        c.start(at(1, 0), &gpu(0, 0.5));
        c.start(at(2, 0), &gpu(1, 0.5)); // another device: a node co-runner only
        c.start(at(3, 0), &gpu(0, 0.25));
        c.start(at(4, 0), &none()); // no GPU: never a device co-runner
        c.start(at(5, 0), &gpu(1, 1.0)); // a whole device is shared with nobody
        let three = c.end(&at(3, 0));
        assert_eq!(three.device, vec![AppId(1)]);
        assert_eq!(three.node, vec![AppId(1), AppId(2), AppId(4), AppId(5)]);
        // Left earlier, still counted; a later one on device 0 counts too.
        c.start(at(2, 1), &gpu(0, 0.25));
        assert_eq!(c.end(&at(1, 0)).device, vec![AppId(2), AppId(3)]);
        assert_eq!(c.end(&at(2, 0)).device, Vec::<AppId>::new());
        assert_eq!(c.end(&at(5, 0)).device, Vec::<AppId>::new());
        assert_eq!(c.end(&at(4, 0)).device, Vec::<AppId>::new());
        assert_eq!(c.end(&at(2, 1)).device, vec![AppId(1)]);
    }
}
