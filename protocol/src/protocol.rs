//! JSON messages of the `/v1` HTTP API, between the CLI, the manager and the agents.
//!
//! Every call but `GET /v1/health` carries `Authorization: Bearer TOKEN`: a user token
//! (user calls), an agent registration token (`POST /v1/agents`), or the per-agent
//! credential that registration returns (every other agent call).

use crate::error_code::ErrorCode;
use crate::ids::{AgentId, AppId, TaskRef};
use crate::resources::{ResourceGrant, ResourceOffer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The lifecycle of a task: waiting → leased → running → done | failed | cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// In its application's queue, not leased to any agent.
    Waiting,
    /// Leased to an agent that has not said it started.
    Leased,
    /// Running on its agent.
    Running,
    /// Ended successfully.
    Done,
    /// Ended in failure after its last allowed attempt.
    Failed,
    /// Cancelled with its application before it could end.
    Cancelled,
}

impl TaskState {
    /// Every state, in life order.
    pub const ALL: [TaskState; 6] = [
        TaskState::Waiting,
        TaskState::Leased,
        TaskState::Running,
        TaskState::Done,
        TaskState::Failed,
        TaskState::Cancelled,
    ];

    /// True once the task can change no more: done, failed or cancelled.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskState::Done | TaskState::Failed | TaskState::Cancelled
        )
    }

    /// The state's name as stored and shown (`waiting`, `leased`, ...).
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

    /// The state called `s` (as [`TaskState::as_str`] names it).
    pub fn parse(s: &str) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// `POST /v1/agents` (registration token).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegisterRequest {
    /// The platform the agent runs on, as the registration token allows.
    pub platform: String,
    /// The node's host name.
    pub hostname: String,
    /// Cores and memory the agent sees on its node.
    pub cores: u32,
    /// Memory of the node, MiB.
    pub memory_mb: u64,
    /// Slots the agent would like (default: its cores).
    pub slots: Option<u32>,
    /// The batch job that started the agent, when a batch system did.
    pub batch_job_id: Option<String>,
    /// When the pilot's batch job ends (unix seconds), if known.
    pub walltime_end: Option<u64>,
    /// The pilot that started this agent (`HETPILOT_PILOT`); needs that pilot's own token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilot: Option<String>,
    /// Tasks "run" without a process: leased, reported at once as successes (measuring
    /// the framework's own ceiling). Refused unless the manager allows it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_work: bool,
    /// GPUs and named counts the agent offers besides cores and memory.
    #[serde(default, skip_serializing_if = "ResourceOffer::is_empty")]
    pub resources: ResourceOffer,
    /// The agent protocol version the agent speaks ([`crate::agent_version`]); absent
    /// from agents older than versions, which speak version 1.
    #[serde(default = "crate::agent_version::unversioned_agent")]
    pub protocol_version: u32,
    /// A random value the agent makes once and sends with every try of its registration
    /// (16-128 of `A-Z a-z 0-9 _ -`): a try whose answer was lost (the manager was
    /// restarted after recording it) gets the same agent back with a fresh credential,
    /// instead of being refused as a second agent on the node. Only its hash is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_key: Option<String>,
}

/// The answer to a registration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegisterResponse {
    /// The id the manager gave the agent.
    pub agent: AgentId,
    /// The agent's own credential for every further call.
    pub credential: String,
    /// Slots the agent may fill: what it asked for, within its cores.
    pub slots: u32,
    /// How often the agent should send heartbeats, milliseconds.
    pub heartbeat_interval_ms: u64,
    /// How long the manager waits without hearing from the agent before it declares it lost
    /// and gives its tasks back, milliseconds.
    pub lease_timeout_ms: u64,
    /// The manager serves HTTP/2 over plain TCP too (prior knowledge): the agent makes its
    /// further calls (heartbeats, long polls, reports) on one multiplexed connection.
    /// Absent from managers that serve HTTP/1.1 only. Under TLS, ALPN decides instead.
    #[serde(default)]
    pub http2: bool,
}

/// `POST /v1/agents/{id}/pull`: long-poll for up to `max` tasks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PullRequest {
    /// The slots' worth of tasks the answer may lease (the agent's free slots and
    /// prefetch). One exception: the wide task an agent keeps slots for (an EASY
    /// reservation) is leased once those slots are free as the manager counts them, even
    /// to a pull asking for fewer (parked since before they freed, it cannot grow).
    pub max: u32,
    /// How long the manager may hold the call open when nothing is waiting, milliseconds.
    pub wait_ms: u64,
    /// Tasks that started since the last call (leased → running).
    #[serde(default)]
    pub started: Vec<TaskAttempt>,
}

/// One attempt (run) of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskAttempt {
    /// The task.
    pub task: TaskRef,
    /// The attempt number, from 1; a retried task gets the next one.
    pub attempt: u32,
}

/// How an application's tasks run; sent once per agent with the first task of the app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppRuntime {
    /// The application.
    pub app: AppId,
    /// Its name, as submitted.
    pub name: String,
    /// Cores each task needs.
    pub cores: u32,
    /// Environment variables each task gets, besides the `HETPILOT_*` ones.
    pub env: BTreeMap<String, String>,
    /// Working directory of the tasks (default: the agent's work directory).
    pub workdir: Option<String>,
    /// Where task stdout/stderr go (default: the agent's work directory).
    pub output_dir: Option<String>,
    /// Per-task wall-clock limit, seconds.
    pub timeout_secs: Option<u64>,
    /// Files the tasks read and write, rendered per task by the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<crate::files::FileTemplates>,
}

/// One leased task to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Assignment {
    /// The task.
    pub task: TaskRef,
    /// The attempt number, from 1.
    pub attempt: u32,
    /// The command rendered for this task, already split into words (never run through a
    /// shell).
    pub argv: Vec<String>,
    /// The task's input line or array value (exported as `HETPILOT_INPUT`).
    pub input: String,
    /// A workflow task's own files (literal names), used instead of the application's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<crate::files::FileTemplates>,
    /// The cores this run reserves when they are the task's own (a workflow task's, or a
    /// moldable task's allocation), instead of the application's `cores`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// The GPUs (or GPU shares) and named counts this run was granted.
    #[serde(default, skip_serializing_if = "ResourceGrant::is_empty")]
    pub resources: ResourceGrant,
    /// A parallel run's hosts, this agent's first (empty: a run on this agent alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<crate::parallel::HostSlots>,
    /// A parallel run's launcher template (its head's platform's), which the head fills
    /// in as `HETPILOT_LAUNCH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<crate::launcher::LaunchTemplate>,
}

/// The answer to a pull.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PullResponse {
    /// The runtime of every application whose first task this agent gets in this answer.
    pub apps: Vec<AppRuntime>,
    /// The leased tasks.
    pub tasks: Vec<Assignment>,
    /// The manager asks the agent to stop pulling, finish, and deregister.
    pub drain: bool,
    /// Runs to kill now (their application was cancelled, or another run completed them).
    #[serde(default)]
    pub kill: Vec<TaskAttempt>,
    /// Outputs of this agent's runs to send to the manager (someone asked to read them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub send_output: Vec<crate::task_output::OutputWanted>,
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoreGrant {
    /// The store's name, one of the manager's `[[storage]]` entries.
    pub store: String,
    /// The owner whose directory on the store the grant opens.
    pub owner: String,
    /// The store's base URL, as agents reach it.
    pub url: String,
    /// The bearer token the store checks.
    pub token: String,
    /// When the grant expires (unix seconds).
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exit status 0.
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Measurements {
    /// Unix milliseconds.
    pub started_at_ms: u64,
    /// Unix milliseconds.
    pub ended_at_ms: u64,
    /// Wall-clock time from start to end, milliseconds.
    pub wall_ms: f64,
    /// User CPU time of the task's process tree, milliseconds (`wait4`).
    pub user_cpu_ms: f64,
    /// System CPU time of the task's process tree, milliseconds (`wait4`).
    pub sys_cpu_ms: f64,
    /// Peak resident set size of the task's process tree, KiB.
    pub max_rss_kb: u64,
    /// Applications whose tasks ran on the same node at any time during this task.
    pub co_runners: Vec<AppId>,
    /// For a run granted a fraction of a GPU: the applications whose runs held a fraction
    /// of the same device at any time during it (its device co-runners). Empty for a run
    /// without a fractional GPU, and from agents that predate it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_co_runners: Vec<AppId>,
}

/// How one attempt of one task ended, as its agent reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskResult {
    /// The task.
    pub task: TaskRef,
    /// The attempt number the lease gave.
    pub attempt: u32,
    /// How the run ended.
    pub outcome: Outcome,
    /// Exit status, when the process exited.
    pub exit_code: Option<i32>,
    /// The signal that killed the process, when one did.
    pub signal: Option<i32>,
    /// What the agent measured of the run.
    pub measurements: Measurements,
    /// Where the run's stdout went on the node.
    pub stdout_path: Option<String>,
    /// Where the run's stderr went on the node.
    pub stderr_path: Option<String>,
    /// The last few KiB of stderr (and of stdout when stderr is empty).
    #[serde(default)]
    pub output_tail: String,
    /// Why the run could not start or its files could not be staged, when so.
    pub error: Option<String>,
    /// Bytes fetched, found in the node's cache and stored back, when the task has files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staging: Option<crate::files::StagingStats>,
}

impl TaskResult {
    /// The result of a run that left no output behind: a zero-work or simulated success,
    /// or a task that could not start (with the reason in `error`). Only its times are
    /// measured; a success's exit code is 0.
    pub fn without_output(
        at: TaskAttempt,
        outcome: Outcome,
        measurements: Measurements,
        error: Option<String>,
    ) -> TaskResult {
        TaskResult {
            task: at.task,
            attempt: at.attempt,
            outcome,
            exit_code: (outcome == Outcome::Success).then_some(0),
            signal: None,
            measurements,
            stdout_path: None,
            stderr_path: None,
            output_tail: String::new(),
            error,
            staging: None,
        }
    }
}

/// `POST /v1/agents/{id}/results`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportRequest {
    /// Results of finished runs, each at most once per attempt.
    pub results: Vec<TaskResult>,
    /// The slots' worth of tasks the agent wants now, these runs' slots freed (as a pull's
    /// `max`). A pull the agent sent before they freed asks for less and cannot grow: the
    /// manager leases to it up to this, within the slots it counts free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wanted: Option<u32>,
}

/// The answer to a report.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportResponse {
    /// Results recorded now.
    pub recorded: u32,
    /// Results that were already recorded (a retried report): ignored.
    pub duplicates: u32,
}

/// `POST /v1/agents/{id}/heartbeat`: what the agent holds (queued, running, or finished
/// but not yet acknowledged), so leases it never received (a lost answer) are given back.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeartbeatRequest {
    /// The newest `lease_ms` of a pull answer the agent has received.
    pub seen_up_to_ms: u64,
    /// Every attempt the agent holds.
    pub held: Vec<TaskAttempt>,
    /// Runs that started since the agent last said so.
    #[serde(default)]
    pub started: Vec<TaskAttempt>,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeartbeatResponse {
    /// The manager asks the agent to stop pulling, finish, and deregister.
    pub drain: bool,
    /// Runs to kill now (their application was cancelled, or another run completed them).
    #[serde(default)]
    pub kill: Vec<TaskAttempt>,
    /// Outputs of this agent's runs to send to the manager (someone asked to read them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub send_output: Vec<crate::task_output::OutputWanted>,
    /// Fresh grants to the file stores the applications of the held tasks use, so no grant
    /// expires under a running task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<StoreGrant>,
    /// How often the agent should beat from now on, milliseconds: the manager stretches
    /// it as agents join (absent from managers with a fixed cadence: keep the one told at
    /// registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_interval_ms: Option<u64>,
    /// How long the manager now waits without hearing from the agent before it declares
    /// it lost, milliseconds (four heartbeat intervals at least).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_timeout_ms: Option<u64>,
}

/// Counts of an application's tasks by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StateCounts {
    /// Tasks waiting in the queue.
    pub waiting: u64,
    /// Tasks leased to an agent, not started.
    pub leased: u64,
    /// Tasks running.
    pub running: u64,
    /// Tasks done.
    pub done: u64,
    /// Tasks failed.
    pub failed: u64,
    /// Tasks cancelled.
    pub cancelled: u64,
}

impl StateCounts {
    /// Tasks in all.
    pub fn total(&self) -> u64 {
        self.waiting + self.leased + self.running + self.done + self.failed + self.cancelled
    }
    /// Tasks in a final state: done, failed or cancelled.
    pub fn finished(&self) -> u64 {
        self.done + self.failed + self.cancelled
    }
    /// The counter of state `s`.
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

/// The answer to `POST /v1/apps`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubmitResponse {
    /// The new application's id.
    pub app: AppId,
    /// How many tasks it holds.
    pub tasks: u64,
}

/// An application as listed (`GET /v1/apps`, `GET /v1/apps/{app}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppSummary {
    /// The application.
    pub app: AppId,
    /// Its name, as submitted.
    pub name: String,
    /// The user who submitted it.
    pub owner: String,
    /// Unix milliseconds.
    pub submitted_at_ms: u64,
    /// True once it was cancelled.
    pub cancelled: bool,
    /// When it ended (its last task ended, or it was cancelled), unix milliseconds; the
    /// retention policy forgets it some time after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at_ms: Option<u64>,
    /// Its tasks by state.
    pub counts: StateCounts,
    /// Attempts of its tasks lost to the infrastructure (a pilot killed, an agent lost):
    /// they do not count against `max_attempts`.
    #[serde(default)]
    pub lost_attempts: u64,
    /// Why no available platform can run its waiting tasks now, e.g. "no available
    /// platform: lab-typo unavailable: sbatch: error: invalid partition specified: smal";
    /// absent when some platform can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// A workflow's blocked and ready tasks and its critical paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<crate::dag::WorkflowProgress>,
}

impl AppSummary {
    /// True when every task is in a final state.
    pub fn is_finished(&self) -> bool {
        self.counts.finished() == self.counts.total()
    }
}

/// What forgetting ended applications removed (`POST /v1/apps/{app}/forget`,
/// `POST /v1/admin/purge`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ForgetSummary {
    /// Applications forgotten.
    pub apps: u64,
    /// Their tasks.
    pub tasks: u64,
}

/// `POST /v1/admin/purge`: forget every application that ended at least this long ago
/// (0: every ended application).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PurgeRequest {
    /// Seconds since the application ended.
    pub older_than_secs: u64,
}

/// One run of a task, as recorded by the manager.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptRecord {
    /// The attempt number, from 1.
    pub attempt: u32,
    /// The agent that ran it.
    pub agent: AgentId,
    /// The agent's platform.
    pub platform: String,
    /// The agent's host name.
    pub host: String,
    /// How it ended; `None` while it runs.
    pub outcome: Option<Outcome>,
    /// Exit status, when the process exited.
    pub exit_code: Option<i32>,
    /// The signal that killed the process, when one did.
    pub signal: Option<i32>,
    /// What the agent measured, once it ended.
    pub measurements: Option<Measurements>,
    /// Where the run's stdout went on the node.
    pub stdout_path: Option<String>,
    /// Where the run's stderr went on the node.
    pub stderr_path: Option<String>,
    /// The last few KiB of its output.
    pub output_tail: Option<String>,
    /// Why the run could not start, or the agent was lost, when so.
    pub error: Option<String>,
    /// The devices (or share of one) and counts the run was granted besides cores.
    #[serde(default, skip_serializing_if = "ResourceGrant::is_empty")]
    pub resources: ResourceGrant,
    /// A parallel run's hosts with their slots, the head (`host`) first; empty for a
    /// run on one agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<crate::parallel::HostSlots>,
    /// The variant the run ran as (`None`: an application without variants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// One task as listed (`GET /v1/apps/{app}/tasks`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskInfo {
    /// The task.
    pub task: TaskRef,
    /// Its state.
    pub state: TaskState,
    /// Attempts so far.
    pub attempts: u32,
    /// Of those, attempts lost to the infrastructure (its agent lost, its pilot killed, the
    /// manager stopped): they do not count against `max_attempts`.
    #[serde(default)]
    pub lost_attempts: u32,
    /// Its input line, array value or parameters (as `HETPILOT_INPUT`).
    pub input: String,
    /// Its latest attempt, if any.
    pub last: Option<AttemptRecord>,
    /// A workflow task's name, parents, times and why it was cancelled.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<crate::dag::WorkflowTaskInfo>,
}

/// Per-platform statistics of an application's successful runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlatformStats {
    /// The platform.
    pub platform: String,
    /// Successful runs on it.
    pub tasks: u64,
    /// Their mean wall-clock time, milliseconds.
    pub mean_wall_ms: f64,
    /// Their mean CPU time (user + system), milliseconds.
    pub mean_cpu_ms: f64,
    /// Their mean peak resident set size, KiB.
    pub mean_max_rss_kb: f64,
    /// Tasks per minute between the first start and the last end on this platform.
    pub throughput_per_min: f64,
    /// Of `tasks`, those "run" by zero-work agents (no process ran).
    #[serde(default)]
    pub zero_work_tasks: u64,
}

/// `GET /v1/apps/{app}/report`: how an application ran on each platform.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppReport {
    /// The application.
    pub summary: AppSummary,
    /// One entry per platform that completed runs.
    pub platforms: Vec<PlatformStats>,
    /// From the first start to the last end, milliseconds; `None` before any run ended.
    pub makespan_ms: Option<u64>,
}

/// An agent as listed (`GET /v1/agents`, admin).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentInfo {
    /// The agent.
    pub agent: AgentId,
    /// Its platform.
    pub platform: String,
    /// Its node's host name.
    pub hostname: String,
    /// Its slots.
    pub slots: u32,
    /// `active`, `draining`, `lost` or `ended`.
    pub state: String,
    /// The batch job that started it, if any.
    pub batch_job_id: Option<String>,
    /// The pilot whose group it belongs to (one agent per node of the pilot's allocation),
    /// while that pilot runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilot: Option<String>,
    /// When it registered (unix ms).
    pub registered_at_ms: u64,
    /// When the manager last heard from it (unix ms).
    pub last_seen_ms: u64,
    /// Attempts it holds now.
    pub tasks_held: u64,
    /// The applications of those attempts: the co-runners on its node.
    #[serde(default)]
    pub apps: Vec<AppId>,
    /// Its GPUs, with how much of each its runs hold now.
    #[serde(default)]
    pub gpus: Vec<crate::agent_resources::AgentGpu>,
    /// Its named counts besides GPUs, offered and in use.
    #[serde(default)]
    pub resources: Vec<crate::agent_resources::AgentResource>,
    /// Slots it keeps for a wide task's reservation as they free up (0: none).
    #[serde(default)]
    pub reserved_slots: u32,
    /// Of those, the ones free now and so held idle for it (narrower runs that end in
    /// time may still take them).
    #[serde(default)]
    pub reserved_idle_slots: u32,
    /// Slots free now as the manager counts them: its slots less those its runs hold and
    /// those it keeps for other agents' parallel runs.
    #[serde(default)]
    pub free_slots: u32,
    /// The parallel runs whose slots it keeps while another agent (their head) runs them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub member_of: Vec<TaskRef>,
    /// The parallel runs it heads, each with the agents that hold it (this one first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_leases: Vec<crate::parallel::GroupLeaseView>,
}

/// `POST /v1/users` (admin).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewUser {
    /// The new user's name.
    pub name: String,
}

/// `POST /v1/agent-tokens` (admin): a registration token for agents of one platform.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewAgentToken {
    /// The platform the token's agents must register on.
    pub platform: String,
    /// Seconds until the token expires (default: the manager's `agent_token_ttl_secs`).
    pub ttl_secs: Option<u64>,
    /// The source address ranges (CIDR, e.g. `10.1.0.0/16`) registrations with the token
    /// must come from, besides the platform's own `register_from`; from anywhere if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register_from: Option<Vec<String>>,
}

/// `GET /v1/agent-tokens` (admin): a registration token still valid, by its id (the
/// first 12 hex digits of its SHA-256; the token itself is never stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentTokenInfo {
    /// First 12 hex digits of the token's SHA-256.
    pub id: String,
    /// The platform its agents must register on.
    pub platform: String,
    /// The admin who created it.
    pub created_by: String,
    /// When it was created (unix ms).
    pub created_at_ms: u64,
    /// When it expires (unix ms).
    pub expires_at_ms: u64,
    /// The source address ranges its registrations must come from; any if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register_from: Option<Vec<String>>,
}

/// A new token, shown once (new users, registration tokens, a rotated admin token).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenResponse {
    /// The token itself.
    pub token: String,
}

/// The body of every error answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// What went wrong, for people.
    pub error: String,
    /// What went wrong, for programs: one of a fixed list.
    pub code: ErrorCode,
}

/// One task with its history (`GET /v1/tasks/{task}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskDetail {
    /// The task as listed.
    #[serde(flatten)]
    pub info: TaskInfo,
    /// Every attempt, oldest first.
    pub history: Vec<AttemptRecord>,
}
