//! Pilots as the manager shows them (`GET /v1/pilots`, `GET /v1/platforms`): a pilot is one
//! batch job that should start one agent. Its states, as stored and shown by `hetpilot
//! pilots`: queued → running (its agent registered) → ended, or failed/cancelled; and each
//! platform's provisioning status.

use serde::{Deserialize, Serialize};

/// Where a pilot is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// The agent it brought up.
    pub agent: Option<u64>,
    /// When its batch job's walltime ends (unix ms), once known.
    pub walltime_end_ms: Option<u64>,
    /// The one user whose tasks it runs (`pilots = "per-user"` platforms); `None`: anyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// The answer to `POST /v1/platforms/reload`: the profiles were re-read; their checks run
/// in the background and show in each platform's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformsReloaded {
    /// The platforms now configured with a profile.
    pub platforms: Vec<String>,
}

/// A platform's provisioning status, as `hetpilot platforms` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
