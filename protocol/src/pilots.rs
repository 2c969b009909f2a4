//! Pilots as the manager shows them (`GET /v1/pilots`, `GET /v1/platforms`): a pilot is one
//! batch job that starts one agent on each node of its allocation (one node unless the
//! platform's profile sets `nodes_per_pilot`); its agents form one group, drained and
//! released together when the allocation ends. Its states, as stored and shown by
//! `hetpilot pilots`: queued → running (its first agent registered) → ended, or
//! failed/cancelled; and each platform's provisioning status.

use serde::{Deserialize, Serialize};

/// Where a pilot is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PilotState {
    /// Submitted (or being submitted); its agent has not registered yet. The batch job may
    /// already run: see [`PilotRecord::job_started_ms`].
    Queued,
    /// Its agent registered.
    Running,
    /// Its batch job ended after its agent registered.
    Ended,
    /// It never brought up a working agent: submission failed, the job vanished or ended
    /// early, or the agent did not register in time.
    Failed,
    /// The provisioner cancelled it before its agent registered (demand dropped), or the
    /// manager cancelled it when it shut down cleanly.
    Cancelled,
}

impl PilotState {
    /// Every state, in life order.
    pub const ALL: [PilotState; 5] = [
        PilotState::Queued,
        PilotState::Running,
        PilotState::Ended,
        PilotState::Failed,
        PilotState::Cancelled,
    ];

    /// The state's name as stored and shown (`queued`, `running`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            PilotState::Queued => "queued",
            PilotState::Running => "running",
            PilotState::Ended => "ended",
            PilotState::Failed => "failed",
            PilotState::Cancelled => "cancelled",
        }
    }

    /// The state called `s` (as [`PilotState::as_str`] names it).
    pub fn parse(s: &str) -> Option<PilotState> {
        PilotState::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// True once the pilot can change no more: ended, failed or cancelled.
    pub fn is_final(self) -> bool {
        !matches!(self, PilotState::Queued | PilotState::Running)
    }
}

/// Everything the manager keeps about one pilot (the `pilots` table, and `hetpilot pilots`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PilotRecord {
    /// The pilot's name, unique on the manager; also its batch job's name.
    pub name: String,
    /// The platform it was submitted to.
    pub platform: String,
    /// `None` until the batch system accepted the job.
    pub batch_job_id: Option<String>,
    /// Where it is in its life.
    pub state: PilotState,
    /// Why it is in its state (empty when nothing needs saying).
    pub reason: String,
    /// When the provisioner submitted it (unix ms).
    pub submitted_ms: u64,
    /// When the batch job was first seen running.
    pub job_started_ms: Option<u64>,
    /// When its agent registered.
    pub registered_ms: Option<u64>,
    /// When it reached a final state (unix ms).
    pub ended_ms: Option<u64>,
    /// The agent it brought up (on a multi-node pilot, the first of its group to register).
    pub agent: Option<u64>,
    /// When its batch job's walltime ends (unix ms), once known.
    pub walltime_end_ms: Option<u64>,
    /// The one user whose tasks it runs (`pilots = "per-user"` platforms); `None`: anyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// When its directory on the platform was removed, its batch output kept in the
    /// manager's data directory (`[provision] pilot_dir_retention_secs` after it ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir_removed_ms: Option<u64>,
    /// Nodes its batch job asks for: one agent registers from each.
    #[serde(default = "one_node")]
    pub nodes: u32,
    /// The agents of its allocation that registered, in order, each from its own node.
    #[serde(default)]
    pub members: Vec<PilotMember>,
}

fn one_node() -> u32 {
    1
}

/// One agent of a pilot's group: the node it runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PilotMember {
    /// The agent's id.
    pub agent: u64,
    /// The node's name as its agent registered it (Slurm's node name under Slurm).
    pub hostname: String,
}

impl PilotRecord {
    /// Whether some of its nodes' agents have yet to register (while it is not final).
    pub fn awaits_members(&self) -> bool {
        !self.state.is_final() && self.members.len() < self.nodes as usize
    }

    /// Its agents' ids, in registration order.
    pub fn agent_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.members.iter().map(|m| m.agent)
    }
}

/// The answer to `POST /v1/platforms/reload`: the profiles were re-read; their checks run
/// in the background and show in each platform's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlatformsReloaded {
    /// The platforms now configured with a profile.
    pub platforms: Vec<String>,
}

/// A platform's provisioning status, as `hetpilot platforms` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlatformStatus {
    /// The platform's name, as in its profile.
    pub name: String,
    /// Its profile's adapter: `slurm`, `pbs`, `torque`, `loadleveler`, `ssh` or `local`.
    pub adapter: String,
    /// False while its login host or batch system fails.
    pub available: bool,
    /// Why it is unavailable, or the last failure.
    pub reason: String,
    /// Consecutive failures, and when the next attempt may run (unix ms).
    pub failures: u32,
    /// Earliest time of the next attempt after a failure (unix ms).
    pub retry_at_ms: u64,
    /// When the provisioner last checked the platform (unix ms).
    pub checked_at_ms: u64,
    /// Cores' worth of waiting tasks the provisioner wants pilots for here (filled in
    /// when listed).
    #[serde(default)]
    pub demand_cores: u64,
}
