//! Who must hear that the control plane changed: agents idle in a long poll for work,
//! clients waiting on an application's progress, and the scheduling round and staging
//! planner when what they plan from changed. Every input that may make work leasable
//! or end a task says so here, from what it changed (the [`Change`]s it made, a new
//! lease plan, a staging plan bound), and the shell takes the accumulated [`Wake`] with
//! the section's other effects once per locked section
//! ([`Control::take_effects`](super::Control::take_effects)), so no call site picks by hand
//! whom to wake.
//!
//! Some waits end by the clock rather than by an event: a workflow no round has planned
//! yet is leased by bottom level once [`PLAN_WAIT_MS`] passed, and a data-intensive
//! application whose Het-HPS plan is late is leased unplanned after
//! [`STAGING_PLAN_WAIT_MS`]. For those the wake carries a deadline, at which the shell
//! wakes the idle agents again.

use crate::queue::{Change, PLAN_WAIT_MS};
use hetpilot_protocol::protocol::TaskState;

/// How long idle agents wait for a data-intensive application's Het-HPS plan before they
/// are woken to lease its tasks unplanned (the plan wakes them as soon as it is bound).
pub const STAGING_PLAN_WAIT_MS: u64 = 5_000;

/// Whom to wake, accumulated over the inputs of one locked section.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Wake {
    /// Agents idle in a long poll may now lease something.
    pub work: bool,
    /// Tasks ended or applications went away: clients waiting on progress look again.
    pub progress: bool,
    /// Agents idle in a long poll may lease something at this time (manager unix ms),
    /// with no event to say so.
    pub work_at_ms: Option<u64>,
    /// What the scheduler plans from changed (an application or an agent came or went,
    /// an application was cancelled, the platforms' profiles changed): a round soon, and
    /// any Het-HPS plan that is now due.
    pub replan: bool,
}

impl Wake {
    /// What `changes` mean to those waiting.
    pub fn of_changes(changes: &[Change]) -> Wake {
        let mut wake = Wake::default();
        for change in changes {
            match change {
                Change::Leased { .. } | Change::GroupLeased { .. } | Change::Started { .. } => {}
                // Back in its queue (a retry, a lost agent's or a given-back lease).
                Change::TaskState {
                    state: TaskState::Waiting,
                    ..
                } => wake.work = true,
                // Its slots are free, and its children may be ready.
                Change::TaskState { state, .. } if state.is_final() => {
                    wake.work = true;
                    wake.progress = true;
                }
                Change::TaskState { .. } => {}
                Change::Result { .. } | Change::AttemptLost { .. } => {
                    wake.work = true;
                    wake.progress = true;
                }
                Change::AgentEnded { .. } => {
                    wake.work = true;
                    wake.progress = true;
                    wake.replan = true;
                }
                Change::AppCancelled { .. } => {
                    wake.progress = true;
                    wake.replan = true;
                }
                Change::AppEnded { .. } => wake.progress = true,
            }
        }
        wake
    }

    /// Idle agents are to be woken `after_ms` past `now_ms`.
    pub fn work_after(now_ms: u64, after_ms: u64) -> Wake {
        Wake {
            work_at_ms: Some(now_ms.saturating_add(after_ms)),
            ..Wake::default()
        }
    }

    /// Both wakes: whom either wakes, at the earlier deadline.
    pub fn merge(&mut self, other: Wake) {
        self.work |= other.work;
        self.progress |= other.progress;
        self.replan |= other.replan;
        self.work_at_ms = match (self.work_at_ms, other.work_at_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// Whether nobody is to be woken.
    pub fn is_empty(&self) -> bool {
        *self == Wake::default()
    }
}

/// The deadline after which idle agents may lease a just-submitted or just-registered
/// workflow's tasks without a plan.
pub(super) fn workflow_plan_deadline(now_ms: u64) -> Wake {
    Wake::work_after(now_ms, PLAN_WAIT_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::protocol::TaskAttempt;
    use hetpilot_protocol::{AgentId, AppId, TaskRef};

    fn task_state(state: TaskState) -> Change {
        Change::TaskState {
            task: TaskRef {
                app: AppId(1),
                index: 0,
            },
            state,
            attempt: 1,
            agent: Some(AgentId(1)),
        }
    }

    #[test]
    fn a_lease_or_a_start_wakes_nobody() {
        let at = TaskAttempt {
            task: TaskRef {
                app: AppId(1),
                index: 0,
            },
            attempt: 1,
        };
        let changes = [
            Change::Leased {
                at,
                agent: AgentId(1),
                now_ms: 5,
                resources: Default::default(),
                variant: None,
            },
            Change::Started { at, now_ms: 6 },
            task_state(TaskState::Running),
        ];
        assert!(Wake::of_changes(&changes).is_empty());
    }

    #[test]
    fn a_requeued_task_wakes_agents_and_an_ended_one_wakes_both() {
        let requeued = Wake::of_changes(&[task_state(TaskState::Waiting)]);
        assert!(requeued.work && !requeued.progress);
        let ended = Wake::of_changes(&[task_state(TaskState::Failed)]);
        assert!(ended.work && ended.progress);
        let cancelled = Wake::of_changes(&[Change::AppCancelled { app: AppId(1) }]);
        assert!(!cancelled.work && cancelled.progress);
    }

    #[test]
    fn merged_wakes_keep_the_earlier_deadline() {
        let mut w = Wake::work_after(1_000, 50);
        w.merge(Wake::work_after(1_000, 20));
        w.merge(Wake {
            progress: true,
            ..Wake::default()
        });
        assert_eq!(w.work_at_ms, Some(1_020));
        assert!(w.progress && !w.work);
        let mut far = Wake::work_after(u64::MAX, 1);
        far.merge(Wake::default());
        assert_eq!(far.work_at_ms, Some(u64::MAX));
    }
}
