//! The second level on shared GPUs as leases apply it: the device co-runner slowdowns the
//! last round measured, and the device of an agent that a fraction of a GPU (`gpus = 0.5`)
//! of an application goes to (the choice itself is
//! `sched::second_level::choose_device`). Before the first round, fractions go to the
//! pool's best fit.

use super::queues::{AgentEntry, Queues};
use crate::sched::second_level::{choose_device, DeviceCandidate};
use crate::sched::SecondLevel;
use hetpilot_protocol::protocol::TaskResult;
use hetpilot_protocol::resources::{ResourceGrant, ResourceRequest};
use hetpilot_protocol::{AgentId, AppId};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Measured slowdowns of one platform: (application, sorted device co-runner set) →
/// runtime with that set / runtime alone on a device.
pub(crate) type PlatformSlowdowns = HashMap<(AppId, Vec<AppId>), f64>;

/// What the last round tells leases about shared devices.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DevicePlan {
    /// The round's second-level policy; `None` before the first round (best fit).
    pub(crate) policy: Option<SecondLevel>,
    /// Measured slowdowns per platform name.
    pub(crate) slowdowns: HashMap<String, PlatformSlowdowns>,
}

impl AgentEntry {
    /// Takes what `request` of `app` asks for from this agent's pool; a fraction of a GPU
    /// goes to the device `plan`'s policy chooses given the applications whose runs hold
    /// fractions of each device now.
    pub(crate) fn take_resources(
        &mut self,
        app: AppId,
        request: &ResourceRequest,
        plan: &DevicePlan,
    ) -> Option<ResourceGrant> {
        let Some(policy) = plan.policy else {
            return self.pool.take(request);
        };
        let mut holders: BTreeMap<u32, BTreeSet<AppId>> = BTreeMap::new();
        for (task, grant) in &self.grants {
            for index in grant.fractional_gpus() {
                holders.entry(index).or_default().insert(task.app);
            }
        }
        let measured = plan.slowdowns.get(&self.platform);
        let slowdown = |a: AppId, set: &[AppId]| measured?.get(&(a, set.to_vec())).copied();
        self.pool.take_picking(request, &|rooms| {
            let candidates: Vec<DeviceCandidate> = rooms
                .iter()
                .map(|&(index, room)| DeviceCandidate {
                    index,
                    room,
                    co_runners: holders
                        .get(&index)
                        .map(|s| s.iter().copied().collect())
                        .unwrap_or_default(),
                })
                .collect();
            choose_device(policy, app, &candidates, &slowdown)
        })
    }
}

impl Queues {
    /// Whether `result`'s attempt, the current one of a task agent `id` holds, was granted
    /// a fraction of a GPU (its device co-runners then mean something, even none).
    pub(crate) fn held_fractional_gpu(&self, id: AgentId, result: &TaskResult) -> bool {
        let current = self
            .apps
            .get(&result.task.app)
            .and_then(|a| a.task(result.task.index))
            .is_some_and(|slot| slot.agent == Some(id) && slot.attempt == result.attempt);
        current
            && self
                .agents
                .get(&id)
                .and_then(|a| a.grants.get(&result.task))
                .is_some_and(|g| g.fractional_gpus().next().is_some())
    }
}
