//! The changes the queues make, in the order they were made, for the store to persist.

use hetpilot_protocol::protocol::{TaskAttempt, TaskResult, TaskState};
use hetpilot_protocol::resources::ResourceGrant;
use hetpilot_protocol::{AgentId, AppId, TaskRef};

/// One change to the queues, to be persisted before anyone is answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A task was leased to an agent as a new attempt.
    Leased {
        /// The task and its new attempt number.
        at: TaskAttempt,
        /// The agent it was leased to.
        agent: AgentId,
        /// When (manager time, unix ms).
        now_ms: u64,
        /// The GPUs and named counts the run was granted (empty for most runs).
        resources: ResourceGrant,
        /// The variant it runs as (`None`: an application without variants).
        variant: Option<String>,
    },
    /// A parallel task's run was leased to a group of agents (after its `Leased`).
    GroupLeased {
        /// The task and attempt.
        at: TaskAttempt,
        /// The agents, the head (which runs it) first.
        members: Vec<super::group_lease::Member>,
    },
    /// The agent started the task.
    Started {
        /// The task and attempt that started.
        at: TaskAttempt,
        /// When the manager heard of it (unix ms).
        now_ms: u64,
    },
    /// A task's state (and attempt count) changed.
    TaskState {
        /// The task.
        task: TaskRef,
        /// Its new state.
        state: TaskState,
        /// Its attempt count now.
        attempt: u32,
        /// The agent of its current or last attempt.
        agent: Option<AgentId>,
    },
    /// The result of one attempt arrived.
    Result {
        /// The result, as the agent reported it.
        result: Box<TaskResult>,
    },
    /// An attempt ended without a result (its agent was lost).
    AttemptLost {
        /// The task and attempt that was lost.
        at: TaskAttempt,
        /// When (unix ms).
        now_ms: u64,
        /// Why, for the attempt's record.
        reason: String,
    },
    /// An agent stopped being active ("lost", "drained").
    AgentEnded {
        /// The agent.
        agent: AgentId,
        /// Its new state, as [`AgentState::as_str`](super::AgentState::as_str) names it.
        state: &'static str,
        /// When (unix ms).
        now_ms: u64,
    },
    /// An application was cancelled.
    AppCancelled {
        /// The application.
        app: AppId,
    },
    /// An application ended: its last task ended, or it was cancelled.
    AppEnded {
        /// The application.
        app: AppId,
        /// When (unix ms).
        now_ms: u64,
    },
}
