//! Leasing a workflow's tasks: each task with its own cores (a moldable one with its
//! planned allocation) and its own GPUs and named counts, within the asking agent's free
//! slots and resources, and, when a workflow policy
//! planned the competing workflows, the ready task planned earliest among all of them in
//! place of the one the application order asked for: the first level decides how many of
//! an agent's slots go to workflows, the policy which workflow's task fills each.

use super::queues::{LeaseBatch, Queues};
use hetpilot_protocol::{AgentId, AppId};

/// How long a workflow no plan orders yet waits for the round that plans it (rounds run
/// on every submission and registration), from its submission or the agent's
/// registration, whichever is later; past it its tasks leave by bottom level.
pub const PLAN_WAIT_MS: u64 = 2_000;

impl Queues {
    /// Leases the next task of workflow `app_id` (or of the workflow the plan puts first)
    /// to `id`; returns the slots it takes (0: nothing leased).
    pub(super) fn lease_workflow_task(
        &mut self,
        id: AgentId,
        app_id: AppId,
        remaining: &mut u32,
        now_ms: u64,
        batch: &mut LeaseBatch,
    ) -> u32 {
        let Some(app_id) = self.pick_workflow(id, app_id, now_ms) else {
            return 0;
        };
        let free = (*remaining).min(self.free_slots(id));
        let reserve = self.gpu_reserve(id);
        let app = self.apps.get_mut(&app_id).expect("picked from the apps");
        let Some(index) = app.pop_waiting(id) else {
            return 0;
        };
        let request = app.task_request(index);
        // A CPU-only task leaves the cores GPU work waiting for this agent's GPUs needs.
        let free = if request.is_empty() {
            free.saturating_sub(reserve)
        } else {
            free
        };
        let app_cores = app.runtime.cores;
        let dag = app.dag.as_mut().expect("a workflow");
        let cores = dag.lease_cores(index, app_cores, free);
        if cores == 0 {
            dag.push_ready(index);
            return 0;
        }
        let agent = self.agents.get_mut(&id).expect("checked by the caller");
        let Some(grant) = agent.take_resources(app_id, &request, &self.plan.devices) else {
            app.dag.as_mut().expect("a workflow").push_ready(index);
            return 0;
        };
        if self.backfill_refused(id, app_id, cores, &grant, now_ms) {
            let agent = self.agents.get_mut(&id).expect("checked by the caller");
            agent.pool.release(&grant);
            let app = self.apps.get_mut(&app_id).expect("picked from the apps");
            app.dag.as_mut().expect("a workflow").push_ready(index);
            return 0;
        }
        self.lease_task(id, app_id, index, cores, grant, remaining, now_ms, batch)
    }

    /// The workflow whose task goes to `id` when `asked` is asked for: `asked` without a
    /// plan, the planned workflow with the earliest planned ready task with one; `None`
    /// while `asked` waits for its first plan or may not go to this agent.
    fn pick_workflow(&mut self, id: AgentId, asked: AppId, now_ms: u64) -> Option<AppId> {
        let agent = &self.agents[&id];
        let only_user = agent.only_user.clone();
        let registered_ms = agent.registered_ms;
        let allowed = |owner: &str| only_user.as_deref().is_none_or(|u| u == owner);
        let app = &self.apps[&asked];
        if app.cancelled || !allowed(&app.owner) {
            return None;
        }
        let dag = app.dag.as_ref()?;
        if !dag.planned() {
            let since = app.submitted_ms.max(registered_ms);
            let waits = self.workflow_planning && now_ms < since.saturating_add(PLAN_WAIT_MS);
            return (!waits).then_some(asked);
        }
        let mut best: Option<(f64, AppId)> = None;
        for (&a, entry) in self.apps.iter_mut() {
            if entry.cancelled || !allowed(&entry.owner) {
                continue;
            }
            let tasks = &entry.tasks;
            let Some(start) = entry.dag.as_mut().and_then(|d| d.next_planned_start(tasks)) else {
                continue;
            };
            if best.is_none_or(|(s, _)| start < s) {
                best = Some((start, a));
            }
        }
        Some(best.map_or(asked, |(_, a)| a))
    }
}
