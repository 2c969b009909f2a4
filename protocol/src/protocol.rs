//! JSON messages of the `/v1` HTTP API, between the CLI, the manager and the agents.
//!
//! Every call but `GET /v1/health` carries `Authorization: Bearer TOKEN`: a user token
//! (user calls), an agent registration token (`POST /v1/agents`), or the per-agent
//! credential that registration returns (every other agent call).

use crate::ids::{AgentId, AppId, TaskRef};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The lifecycle of a task: waiting → leased → running → done | failed | cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Waiting,
    Leased,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl TaskState {
    pub const ALL: [TaskState; 6] = [
        TaskState::Waiting,
        TaskState::Leased,
        TaskState::Running,
        TaskState::Done,
        TaskState::Failed,
        TaskState::Cancelled,
    ];

    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskState::Done | TaskState::Failed | TaskState::Cancelled
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Waiting => "waiting",
            TaskState::Leased => "leased",
            TaskState::Running => "running",
            TaskState::Done => "done",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// `POST /v1/agents` (registration token).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegisterRequest {
    pub platform: String,
    pub hostname: String,
    /// Cores and memory the agent sees on its node.
    pub cores: u32,
    pub memory_mb: u64,
    /// Slots the agent would like (default: its cores).
    pub slots: Option<u32>,
    pub batch_job_id: Option<String>,
    /// When the pilot's batch job ends (unix seconds), if known.
    pub walltime_end: Option<u64>,
    /// The pilot that started this agent (`HETPILOT_PILOT`); needs that pilot's own token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilot: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegisterResponse {
    pub agent: AgentId,
    /// The agent's own credential for every further call.
    pub credential: String,
    pub slots: u32,
    pub heartbeat_interval_ms: u64,
    pub lease_timeout_ms: u64,
}

/// `POST /v1/agents/{id}/pull`: long-poll for up to `max` tasks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PullRequest {
    pub max: u32,
    pub wait_ms: u64,
    /// Tasks that started since the last call (leased → running).
    #[serde(default)]
    pub started: Vec<TaskAttempt>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskAttempt {
    pub task: TaskRef,
    pub attempt: u32,
}

/// How an application's tasks run; sent once per agent with the first task of the app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppRuntime {
    pub app: AppId,
    pub name: String,
    pub cores: u32,
    pub env: BTreeMap<String, String>,
    pub workdir: Option<String>,
    pub output_dir: Option<String>,
    pub timeout_secs: Option<u64>,
    /// Files the tasks read and write, rendered per task by the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<crate::files::FileTemplates>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Assignment {
    pub task: TaskRef,
    pub attempt: u32,
    pub argv: Vec<String>,
    /// The task's input line or array value (exported as `HETPILOT_INPUT`).
    pub input: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PullResponse {
    pub apps: Vec<AppRuntime>,
    pub tasks: Vec<Assignment>,
    /// The manager asks the agent to stop pulling, finish, and deregister.
    pub drain: bool,
    /// Runs to kill now (their application was cancelled, or another run completed them).
    #[serde(default)]
    pub kill: Vec<TaskAttempt>,
    /// When these leases were granted (manager time, unix ms); echoed in heartbeats.
    pub lease_ms: u64,
    /// Fresh grants to the file stores these tasks' applications use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<StoreGrant>,
}

/// The right to read and write one owner's files on one file store until `expires`
/// (unix seconds), sent by the manager to the agents running that owner's tasks. The
/// token goes in an `Authorization` header only; `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreGrant {
    pub store: String,
    pub owner: String,
    /// The store's base URL, as agents reach it.
    pub url: String,
    pub token: String,
    pub expires: u64,
}

impl std::fmt::Debug for StoreGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreGrant")
            .field("store", &self.store)
            .field("owner", &self.owner)
            .field("url", &self.url)
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    /// Non-zero exit status.
    Failed,
    /// Killed by a signal it did not ask for.
    Signaled,
    /// Killed by the agent at the task's timeout.
    TimedOut,
    /// Could not be started (missing program, bad working directory, ...).
    SpawnError,
}

/// The measurements of one run of one task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurements {
    /// Unix milliseconds.
    pub started_at_ms: u64,
    pub ended_at_ms: u64,
    pub wall_ms: f64,
    pub user_cpu_ms: f64,
    pub sys_cpu_ms: f64,
    /// Peak resident set size of the task's process tree, KiB.
    pub max_rss_kb: u64,
    /// Applications whose tasks ran on the same node at any time during this task.
    pub co_runners: Vec<AppId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub task: TaskRef,
    pub attempt: u32,
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub measurements: Measurements,
    pub stdout_path: Option<String>,
    pub stderr_path: Option<String>,
    /// The last few KiB of stderr (and of stdout when stderr is empty).
    #[serde(default)]
    pub output_tail: String,
    pub error: Option<String>,
    /// Bytes fetched, found in the node's cache and stored back, when the task has files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staging: Option<crate::files::StagingStats>,
}

/// `POST /v1/agents/{id}/results`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReportRequest {
    pub results: Vec<TaskResult>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReportResponse {
    /// Results recorded now.
    pub recorded: u32,
    /// Results that were already recorded (a retried report): ignored.
    pub duplicates: u32,
}

/// `POST /v1/agents/{id}/heartbeat`: what the agent holds (queued, running, or finished
/// but not yet acknowledged), so leases it never received (a lost answer) are given back.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HeartbeatRequest {
    /// The newest `lease_ms` of a pull answer the agent has received.
    pub seen_up_to_ms: u64,
    pub held: Vec<TaskAttempt>,
    /// Runs that started since the agent last said so.
    #[serde(default)]
    pub started: Vec<TaskAttempt>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeartbeatResponse {
    pub drain: bool,
    #[serde(default)]
    pub kill: Vec<TaskAttempt>,
    /// Fresh grants to the file stores the applications of the held tasks use, so no grant
    /// expires under a running task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<StoreGrant>,
}

/// Counts of an application's tasks by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCounts {
    pub waiting: u64,
    pub leased: u64,
    pub running: u64,
    pub done: u64,
    pub failed: u64,
    pub cancelled: u64,
}

impl StateCounts {
    pub fn total(&self) -> u64 {
        self.waiting + self.leased + self.running + self.done + self.failed + self.cancelled
    }
    pub fn finished(&self) -> u64 {
        self.done + self.failed + self.cancelled
    }
    pub fn get_mut(&mut self, s: TaskState) -> &mut u64 {
        match s {
            TaskState::Waiting => &mut self.waiting,
            TaskState::Leased => &mut self.leased,
            TaskState::Running => &mut self.running,
            TaskState::Done => &mut self.done,
            TaskState::Failed => &mut self.failed,
            TaskState::Cancelled => &mut self.cancelled,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SubmitResponse {
    pub app: AppId,
    pub tasks: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppSummary {
    pub app: AppId,
    pub name: String,
    pub owner: String,
    /// Unix milliseconds.
    pub submitted_at_ms: u64,
    pub cancelled: bool,
    pub counts: StateCounts,
    /// Why no available platform can run its waiting tasks now, e.g. "no available
    /// platform: lab-typo unavailable: sbatch: error: invalid partition specified: smal";
    /// absent when some platform can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

impl AppSummary {
    pub fn is_finished(&self) -> bool {
        self.counts.finished() == self.counts.total()
    }
}

/// One run of a task, as recorded by the manager.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub attempt: u32,
    pub agent: AgentId,
    pub platform: String,
    pub host: String,
    pub outcome: Option<Outcome>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub measurements: Option<Measurements>,
    pub stdout_path: Option<String>,
    pub stderr_path: Option<String>,
    pub output_tail: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskInfo {
    pub task: TaskRef,
    pub state: TaskState,
    pub attempts: u32,
    pub input: String,
    pub last: Option<AttemptRecord>,
}

/// Per-platform statistics of an application's completed runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlatformStats {
    pub platform: String,
    pub tasks: u64,
    pub mean_wall_ms: f64,
    pub mean_cpu_ms: f64,
    pub mean_max_rss_kb: f64,
    /// Tasks per minute between the first start and the last end on this platform.
    pub throughput_per_min: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppReport {
    pub summary: AppSummary,
    pub platforms: Vec<PlatformStats>,
    pub makespan_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentInfo {
    pub agent: AgentId,
    pub platform: String,
    pub hostname: String,
    pub slots: u32,
    pub state: String,
    pub batch_job_id: Option<String>,
    pub registered_at_ms: u64,
    pub last_seen_ms: u64,
    pub tasks_held: u64,
}

/// `POST /v1/users` (admin).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewUser {
    pub name: String,
}

/// `POST /v1/agent-tokens` (admin): a registration token for agents of one platform.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewAgentToken {
    pub platform: String,
    /// Seconds until the token expires (default: the manager's `agent_token_ttl_secs`).
    pub ttl_secs: Option<u64>,
}

/// `GET /v1/agent-tokens` (admin): a registration token still valid, by its id (the
/// first 12 hex digits of its SHA-256; the token itself is never stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentTokenInfo {
    pub id: String,
    pub platform: String,
    pub created_by: String,
    pub created_at_ms: u64,
    pub expires_at_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenResponse {
    pub token: String,
}

/// The body of every error answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
}

/// One task with its history (`GET /v1/tasks/{task}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskDetail {
    #[serde(flatten)]
    pub info: TaskInfo,
    pub history: Vec<AttemptRecord>,
}
