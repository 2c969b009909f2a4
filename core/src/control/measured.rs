//! What the control plane learns from: the resources of applications and agents, and
//! every run that reported a result with its measurements and transfers. The store
//! rebuilds them at start-up (`db::measured`); reports add to them as they arrive.

use hetpilot_protocol::files::Transfer;
use hetpilot_protocol::protocol::{Outcome, TaskResult};
use hetpilot_protocol::{AgentId, AppId};
use serde::{Deserialize, Serialize};

/// An application's owner and what each of its tasks reserves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppResources {
    /// The application.
    pub app: AppId,
    /// The user whose usage its runs are charged to.
    pub owner: String,
    /// Cores each task reserves.
    pub cores: u32,
    /// Memory each task reserves, MiB (0: unspecified).
    pub memory_mb: u64,
}

/// An agent's platform and node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentResources {
    /// The agent.
    pub agent: AgentId,
    /// The platform it runs on.
    pub platform: String,
    /// Its slots (the cores it offers).
    pub slots: u32,
    /// Memory of its node, MiB.
    pub memory_mb: u64,
}

/// One run that reported a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The run's application.
    pub app: AppId,
    /// The agent that ran it.
    pub agent: AgentId,
    /// How it ended.
    pub outcome: Outcome,
    /// Its wall-clock time, milliseconds.
    pub wall_ms: f64,
    /// When it started (unix ms, the agent's measurement).
    pub started_ms: u64,
    /// Applications whose tasks ran on the same node during it.
    pub co_runners: Vec<AppId>,
    /// Measured transfers per endpoint (none when the task has no files).
    pub transfers: Vec<Transfer>,
    /// For a run granted a fraction of a GPU: the applications whose runs held a fraction
    /// of the same device during it (empty: it had the device alone). `None` for a run
    /// without a fractional GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_co_runners: Option<Vec<AppId>>,
    /// The variant it ran as (`None`: an application without variants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// What the runs of forgotten applications cost one user: their records left the store,
/// their charges stay in the user's fairshare usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarriedUsage {
    /// The user charged.
    pub user: String,
    /// The charges, dated on the ledger's clock (unix seconds).
    pub usage: crate::fairshare::UsageAccount,
}

/// Everything the control plane learns from, as the store holds it.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Measured {
    /// Every application's owner and reservations.
    pub apps: Vec<AppResources>,
    /// Every agent's platform and node.
    pub agents: Vec<AgentResources>,
    /// In the order they ended.
    pub runs: Vec<Run>,
    /// Usage carried over from forgotten applications, per user.
    #[serde(default)]
    pub carried: Vec<CarriedUsage>,
}

/// The runs of the results a report records (duplicates left out).
pub(crate) fn runs(agent: AgentId, results: &[TaskResult], duplicate: &[bool]) -> Vec<Run> {
    results
        .iter()
        .zip(duplicate)
        .filter(|(_, dup)| !**dup)
        .map(|(r, _)| Run {
            app: r.task.app,
            agent,
            outcome: r.outcome,
            wall_ms: r.measurements.wall_ms,
            started_ms: r.measurements.started_at_ms,
            co_runners: r.measurements.co_runners.clone(),
            transfers: r
                .staging
                .as_ref()
                .map(|s| s.transfers.clone())
                .unwrap_or_default(),
            device_co_runners: None,
            variant: None,
        })
        .collect()
}
