//! The rule that keeps an agent's GPUs usable while CPU-only work waits too: an agent
//! with GPUs leases a CPU-only task only from the cores that the GPU work waiting now,
//! and able to run on its free GPUs, leaves over. Without it, CPU-only tasks would fill
//! every slot of a GPU node and its GPUs would idle while GPU tasks wait.
//!
//! The reserve counts, application by application in id order, the ready tasks that ask
//! for GPUs, that this agent may run (owner, not cancelled), and that a copy of its pool
//! would still grant, at the application's cores each, up to the agent's free slots. A
//! workflow counts at its application-wide request. Agents without GPUs reserve nothing.

use super::queues::Queues;
use hetpilot_protocol::AgentId;

impl Queues {
    /// The cores of agent `id` kept for the GPU work waiting now (0 without GPUs).
    pub(super) fn gpu_reserve(&self, id: AgentId) -> u32 {
        let agent = &self.agents[&id];
        if !agent.pool.has_gpus() {
            return 0;
        }
        let free = self.free_slots(id);
        let mut pool = agent.pool.clone();
        let mut reserve = 0u32;
        for app in self.apps.values() {
            if app.cancelled
                || app.request.gpus().is_zero()
                || agent.only_user.as_ref().is_some_and(|u| *u != app.owner)
            {
                continue;
            }
            let cores = app.runtime.cores.max(1);
            for _ in 0..app.ready_count() {
                if reserve >= free || pool.take(&app.request).is_none() {
                    break;
                }
                reserve = reserve.saturating_add(cores);
            }
            if reserve >= free {
                return free;
            }
        }
        reserve.min(free)
    }

    /// Whether a CPU-only task taking `cores` may go to agent `id` now: it fits in the
    /// free slots that the GPU reserve leaves.
    pub(super) fn cpu_task_fits(&self, id: AgentId, cores: u32) -> bool {
        !self.agents[&id].pool.has_gpus()
            || cores <= self.free_slots(id).saturating_sub(self.gpu_reserve(id))
    }
}
