//! The pilots the manager keeps on its platforms, as the control plane decides them: each
//! pilot's record and its life (queued, running, then done, failed or cancelled), and its
//! agents as one group (see `pilot_groups`). Every change is a [`PilotEvent`] taken with
//! the clock; what it changed comes back as a [`PilotOutcome`] for the shell to persist
//! and to apply to the pilot's registration credential, which the shell keeps (the book
//! never sees a secret, only what becomes of it).

use super::pilot_groups::{Groups, PilotRefused};
use hetpilot_protocol::pilots::{PilotMember, PilotRecord, PilotState};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Something that happened to a pilot (the provisioner's and the agents' sides alike).
/// Every variant names its pilot in `pilot`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[allow(missing_docs)] // `pilot` in every variant; the other fields are documented
pub enum PilotEvent {
    /// A pilot was made, its record and credential committed: queued, being submitted.
    Created {
        pilot: String,
        /// The platform it goes to.
        platform: String,
        /// The one user whose tasks it runs (a per-user platform's pilot).
        user: Option<String>,
        /// Nodes its batch job asks for.
        nodes: u32,
    },
    /// The batch system accepted its job, `batch_job_id`.
    Submitted { pilot: String, batch_job_id: String },
    /// Its submission failed with `error` (unless an agent registered all the same).
    SubmissionFailed { pilot: String, error: String },
    /// It was being submitted when the manager stopped: it is lost.
    SubmissionLost { pilot: String },
    /// Its batch job was seen running.
    JobStarted { pilot: String },
    /// The provisioner moves it from `from` to `to` for `reason`, unless its state changed
    /// meanwhile.
    Moved {
        pilot: String,
        from: PilotState,
        to: PilotState,
        reason: String,
    },
    /// Its directory on the platform was removed (its batch output kept).
    DirRemoved { pilot: String },
    /// An agent on node `hostname` presents the pilot's credential to register.
    Claimed { pilot: String, hostname: String },
    /// That agent registered as `agent` from `hostname` (its claim made earlier).
    Registered {
        pilot: String,
        agent: u64,
        hostname: String,
        /// When its batch job's walltime ends (unix seconds), as the agent read it.
        walltime_end_s: Option<u64>,
    },
}

impl PilotEvent {
    /// The pilot it is about.
    pub fn pilot(&self) -> &str {
        match self {
            PilotEvent::Created { pilot, .. }
            | PilotEvent::Submitted { pilot, .. }
            | PilotEvent::SubmissionFailed { pilot, .. }
            | PilotEvent::SubmissionLost { pilot }
            | PilotEvent::JobStarted { pilot }
            | PilotEvent::Moved { pilot, .. }
            | PilotEvent::DirRemoved { pilot }
            | PilotEvent::Claimed { pilot, .. }
            | PilotEvent::Registered { pilot, .. } => pilot,
        }
    }
}

/// What becomes of a pilot's registration credential.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialFate {
    /// Nothing changes.
    #[default]
    Kept,
    /// Its last agent was admitted: it answers only retried registrations until this
    /// time (unix ms), the end of the group's registration window.
    ExpiresBy(u64),
    /// The pilot ended: the credential goes.
    Revoked,
}

/// What an event changed.
#[must_use = "the changed record is to be persisted and the credential's fate applied"]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PilotOutcome {
    /// The pilot's record as it is now, when the event changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<PilotRecord>,
    /// How long its batch job waited in the batch queue, when this event is its first
    /// sign of life (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_wait_ms: Option<u64>,
    /// What becomes of its registration credential.
    #[serde(default)]
    pub credential: CredentialFate,
    /// Its group is whole with this registration: its agents may be leased tasks now.
    #[serde(default)]
    pub whole: bool,
}

/// A new pilot's record: queued, being submitted.
pub fn queued_pilot(
    name: &str,
    platform: &str,
    user: Option<&str>,
    nodes: u32,
    now_ms: u64,
) -> PilotRecord {
    PilotRecord {
        name: name.to_string(),
        platform: platform.to_string(),
        batch_job_id: None,
        state: PilotState::Queued,
        reason: "submitting".into(),
        submitted_ms: now_ms,
        job_started_ms: None,
        registered_ms: None,
        ended_ms: None,
        agent: None,
        walltime_end_ms: None,
        user: user.map(str::to_string),
        dir_removed_ms: None,
        nodes,
        members: Vec::new(),
    }
}

/// Every pilot and its group.
#[derive(Debug, Default)]
pub(super) struct PilotBook {
    records: BTreeMap<String, PilotRecord>,
    groups: Groups,
}

impl PilotBook {
    /// Takes the pilots the store recorded (start-up only).
    pub(super) fn restore(&mut self, records: Vec<PilotRecord>) {
        for r in records {
            self.groups.index(&r);
            self.records.insert(r.name.clone(), r);
        }
    }

    pub(super) fn set_window(&mut self, window_ms: u64) {
        self.groups.window_ms = window_ms;
    }

    pub(super) fn window_ms(&self) -> u64 {
        self.groups.window_ms
    }

    pub(super) fn records(&self) -> impl Iterator<Item = &PilotRecord> {
        self.records.values()
    }

    pub(super) fn record(&self, name: &str) -> Option<&PilotRecord> {
        self.records.get(name)
    }

    pub(super) fn agent_pilots(&self) -> &HashMap<u64, String> {
        self.groups.agent_pilots()
    }

    pub(super) fn pilot_of(&self, agent: u64) -> Option<&str> {
        self.groups.pilot_of(agent)
    }

    /// Whether `agent` belongs to a pilot whose credential still admits agents at
    /// `now_ms`: it is leased nothing until then.
    pub(super) fn holds(&self, agent: u64, now_ms: u64) -> bool {
        self.groups
            .pilot_of(agent)
            .and_then(|p| self.records.get(p))
            .is_some_and(|r| self.groups.admitting(r, now_ms))
    }

    /// Until when a stored credential of pilot `name`, valid until `expires_ms`, is still
    /// to be accepted after a restart at `now_ms`: while the pilot admits agents, to its
    /// own end; after, for its agents' retried registrations, to the end of the window;
    /// never once the pilot is final.
    pub(super) fn credential_until(&self, name: &str, expires_ms: u64, now_ms: u64) -> Option<u64> {
        let r = self.records.get(name)?;
        let until = if self.groups.admitting(r, now_ms) {
            expires_ms
        } else {
            r.registered_ms
                .map_or(0, |first| self.groups.window_end(first))
                .min(expires_ms)
        };
        (until > now_ms && !r.state.is_final()).then_some(until)
    }

    /// Applies `event` at `now_ms`.
    pub(super) fn apply(
        &mut self,
        event: PilotEvent,
        now_ms: u64,
    ) -> Result<PilotOutcome, PilotRefused> {
        let mut outcome = PilotOutcome::default();
        let name = event.pilot().to_string();
        let refused = || PilotRefused::NoLongerWaiting(name.clone());
        if let PilotEvent::Created {
            pilot,
            platform,
            user,
            nodes,
        } = &event
        {
            let record = queued_pilot(pilot, platform, user.as_deref(), *nodes, now_ms);
            self.records.insert(pilot.clone(), record.clone());
            outcome.changed = Some(record);
            return Ok(outcome);
        }
        let Some(r) = self.records.get_mut(&name) else {
            return match event {
                PilotEvent::Claimed { .. } | PilotEvent::Registered { .. } => Err(refused()),
                _ => Ok(outcome),
            };
        };
        let before = r.clone();
        let mut joined = None;
        match event {
            // Made above, before the look-up.
            PilotEvent::Created { .. } => return Ok(outcome),
            PilotEvent::Submitted { batch_job_id, .. } => {
                r.batch_job_id = Some(batch_job_id);
                // Its agent may have registered already (the local and ssh adapters start
                // it at once): then it is running, not waiting.
                if r.state == PilotState::Queued {
                    r.reason = "waiting in the batch queue".into();
                }
            }
            PilotEvent::SubmissionFailed { error, .. } => {
                // An agent that registered all the same shows the job runs.
                if r.state == PilotState::Queued {
                    r.state = PilotState::Failed;
                    r.reason = format!("submission failed: {error}");
                }
            }
            PilotEvent::SubmissionLost { .. } => {
                if !r.state.is_final() {
                    r.state = PilotState::Failed;
                    r.reason = "the manager stopped before its submission finished".into();
                }
            }
            PilotEvent::JobStarted { .. } => {
                outcome.queue_wait_ms = job_started(r, now_ms);
                if r.state == PilotState::Queued {
                    r.reason = "batch job running; waiting for its agent to register".into();
                }
            }
            PilotEvent::Moved {
                from, to, reason, ..
            } => {
                if r.state == from {
                    r.state = to;
                    r.reason = reason;
                }
            }
            PilotEvent::DirRemoved { .. } => r.dir_removed_ms = Some(now_ms),
            PilotEvent::Claimed { hostname, .. } => {
                if let Some(window_end) = self.groups.claim(r, &hostname, now_ms)? {
                    outcome.credential = CredentialFate::ExpiresBy(window_end);
                }
            }
            PilotEvent::Registered {
                agent,
                hostname,
                walltime_end_s,
                ..
            } => {
                match r.state {
                    PilotState::Queued => {
                        r.state = PilotState::Running;
                        r.reason = String::new();
                        r.registered_ms = Some(now_ms);
                        outcome.queue_wait_ms = job_started(r, now_ms);
                        r.agent = Some(agent);
                        if let Some(end) = walltime_end_s {
                            r.walltime_end_ms = Some(end.saturating_mul(1000));
                        }
                    }
                    PilotState::Running if r.awaits_members() => {}
                    _ => return Err(refused()),
                }
                let member = PilotMember { agent, hostname };
                r.members.push(member.clone());
                outcome.whole = !r.awaits_members();
                joined = Some(member);
            }
        }
        if *r == before {
            return Ok(outcome);
        }
        if r.state.is_final() && r.ended_ms.is_none() {
            r.ended_ms = Some(now_ms);
        }
        let record = r.clone();
        if let Some(member) = &joined {
            self.groups.join(&name, member);
        }
        if record.state.is_final() {
            self.groups.disband(&record);
            outcome.credential = CredentialFate::Revoked;
        }
        outcome.changed = Some(record);
        Ok(outcome)
    }
}

/// Notes that `r`'s batch job started at `now_ms` (its first sign of life: the batch
/// system's state or its agent's registration); returns its batch-queue wait, once.
fn job_started(r: &mut PilotRecord, now_ms: u64) -> Option<u64> {
    if r.job_started_ms.is_some() {
        return None;
    }
    r.job_started_ms = Some(now_ms);
    Some(now_ms.saturating_sub(r.submitted_ms))
}
