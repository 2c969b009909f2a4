//! The changes the queues make, in the order they were made, for the store to persist.

use hetpilot_protocol::protocol::{TaskAttempt, TaskResult, TaskState};
use hetpilot_protocol::{AgentId, AppId, TaskRef};

#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A task was leased to an agent as a new attempt.
    Leased {
        at: TaskAttempt,
        agent: AgentId,
        now_ms: u64,
    },
    /// The agent started the task.
    Started { at: TaskAttempt, now_ms: u64 },
    /// A task's state (and attempt count) changed.
    TaskState {
        task: TaskRef,
        state: TaskState,
        attempt: u32,
        agent: Option<AgentId>,
    },
    /// The result of one attempt arrived.
    Result { result: Box<TaskResult> },
    /// An attempt ended without a result (its agent was lost).
    AttemptLost {
        at: TaskAttempt,
        now_ms: u64,
        reason: String,
    },
    /// An agent stopped being active ("lost", "drained").
    AgentEnded {
        agent: AgentId,
        state: &'static str,
        now_ms: u64,
    },
    /// An application was cancelled.
    AppCancelled { app: AppId },
}
