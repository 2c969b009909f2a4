//! What the live manager adds to a workflow's task rows: names, parents' names, whether a
//! waiting task is blocked, the last run's start and end, and why a task was cancelled.

use super::Manager;
use hetpilot_protocol::dag::WorkflowTaskInfo;
use hetpilot_protocol::protocol::{TaskInfo, TaskState};
use hetpilot_protocol::AppId;

impl Manager {
    /// Fills in `workflow` on each row of `app`'s tasks, if `app` is a workflow.
    /// An array task's input is its array value (`--array 1-300`: task 0 is 1), which
    /// the store does not keep: filled in from the application.
    pub(super) fn fill_array_inputs(&self, app: AppId, tasks: &mut [TaskInfo]) {
        let control = self.control();
        let Some(entry) = control.queues().app(app) else {
            return;
        };
        for t in tasks.iter_mut().filter(|t| t.input.is_empty()) {
            if let Some(value) = entry.array_value(t.task.index) {
                t.input = value.to_string();
            }
        }
    }

    pub(super) fn annotate_workflow_tasks(&self, app: AppId, tasks: &mut [TaskInfo]) {
        let control = self.control();
        let Some(entry) = control.queues().app(app) else {
            return;
        };
        let Some(dag) = entry.dag.as_ref() else {
            return;
        };
        let slots = entry.task_slots();
        let any_cancelled = tasks.iter().any(|t| t.state == TaskState::Cancelled);
        let failed = if any_cancelled && !entry.cancelled {
            dag.failed_ancestors(slots)
        } else {
            Vec::new()
        };
        for t in tasks.iter_mut() {
            let index = t.task.index;
            let Some(slot) = entry.task(index) else {
                continue;
            };
            let measured = t.last.as_ref().and_then(|a| a.measurements.as_ref());
            let cancelled_because = (slot.state == TaskState::Cancelled)
                .then(|| failed.get(index as usize).copied().flatten())
                .flatten()
                .map(|a| format!("its ancestor `{}` failed", entry.task_name(u64::from(a))));
            t.workflow = Some(WorkflowTaskInfo {
                name: entry.task_name(index),
                parents: dag
                    .parents(index)
                    .iter()
                    .map(|&p| entry.task_name(u64::from(p)))
                    .collect(),
                blocked: slot.state == TaskState::Waiting && !dag.is_ready(index),
                started_ms: measured.map(|m| m.started_at_ms),
                ended_ms: measured.map(|m| m.ended_at_ms),
                cancelled_because,
            });
        }
    }
}
