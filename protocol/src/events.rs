//! The task-event stream (`GET /v1/apps/{app}/events`): one event per task end, in the
//! order the manager's store recorded the ends, each carrying the cursor that resumes the
//! stream just past it (`?after=CURSOR`), so a client that reconnects misses no end and
//! sees none twice. Sent as newline-delimited JSON, or as server-sent events.

use crate::protocol::{Outcome, StateCounts, TaskState};
use crate::{AgentId, AppId, TaskRef};
use serde::{Deserialize, Serialize};

/// One task's end: its final state and its last attempt, as `GET /v1/apps/{app}/tasks`
/// and `GET /v1/tasks/{task}` name them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskEnd {
    /// Where this end stands in its application's stream: `?after=` it resumes past it.
    /// Cursors grow along the stream; they need not be consecutive.
    pub cursor: u64,
    /// The task (its application and index).
    pub task: TaskRef,
    /// Its final state: done, failed or cancelled.
    pub state: TaskState,
    /// Its last attempt's number (0 when it never ran: cancelled while waiting).
    pub attempt: u32,
    /// How its last attempt ended, when one ran to a result.
    pub outcome: Option<Outcome>,
    /// Exit status, when the process exited.
    pub exit_code: Option<i32>,
    /// The signal that killed the process, when one did.
    pub signal: Option<i32>,
    /// Wall-clock time of its last attempt, milliseconds.
    pub wall_ms: Option<f64>,
    /// The agent that ran its last attempt.
    pub agent: Option<AgentId>,
    /// That agent's host name.
    pub host: Option<String>,
    /// Where the last attempt's stdout went on the node.
    pub stdout_path: Option<String>,
    /// Where the last attempt's stderr went on the node.
    pub stderr_path: Option<String>,
    /// Why the last attempt could not start, or was lost, when so.
    pub error: Option<String>,
}

/// One line of the stream (the `type` field tells which).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AppEvent {
    /// A task ended.
    TaskEnd(TaskEnd),
    /// Every task of the application has ended and every end was sent: the stream closes
    /// after this line.
    AppEnd {
        /// The application.
        app: AppId,
        /// True when it was cancelled.
        cancelled: bool,
        /// Its tasks by state.
        counts: StateCounts,
    },
    /// Nothing ended for a while; sent so that an idle stream shows it is alive (and a
    /// closed connection is noticed). `cursor` is the last end sent, as before.
    Keepalive {
        /// The cursor of the last end sent on this stream (or the one it started after).
        cursor: u64,
    },
}

impl AppEvent {
    /// The cursor to resume after once this event is handled.
    pub fn cursor(&self) -> Option<u64> {
        match self {
            AppEvent::TaskEnd(end) => Some(end.cursor),
            AppEvent::Keepalive { cursor } => Some(*cursor),
            AppEvent::AppEnd { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_names_its_type_and_reads_back() {
        let end = AppEvent::TaskEnd(TaskEnd {
            cursor: 7,
            task: TaskRef {
                app: AppId(3),
                index: 2,
            },
            state: TaskState::Done,
            attempt: 1,
            outcome: Some(Outcome::Success),
            exit_code: Some(0),
            signal: None,
            wall_ms: Some(12.5),
            agent: Some(AgentId(1)),
            host: Some("node1".into()),
            stdout_path: Some("/tmp/o".into()),
            stderr_path: None,
            error: None,
        });
        let line = serde_json::to_string(&end).unwrap();
        assert!(
            line.starts_with(r#"{"type":"task_end","cursor":7,"#),
            "{line}"
        );
        assert_eq!(serde_json::from_str::<AppEvent>(&line).unwrap(), end);
        let last = AppEvent::AppEnd {
            app: AppId(3),
            cancelled: false,
            counts: StateCounts::default(),
        };
        let line = serde_json::to_string(&last).unwrap();
        assert!(line.starts_with(r#"{"type":"app_end","#), "{line}");
        assert_eq!(last.cursor(), None);
    }
}
