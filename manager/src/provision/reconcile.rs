//! The pilot reconciler's decision core. PURE: data in (one platform's demand, caps, pilots
//! with what the batch system last said about their jobs, backoff state, and `now`),
//! decisions out (pilot transitions, jobs to cancel, agents to drain, pilots to submit).
//! No clock, no I/O: the provisioner loop feeds it and carries its decisions out.

use super::adapter::JobState;
use crate::config::provision::{ms, ProvisionConfig};
use hetpilot_protocol::pilots::PilotState;

/// The exit status of a job script that did not find the agent binary (the templates
/// exit 127 with a message, like a shell's "command not found").
pub const EXIT_AGENT_MISSING: i32 = 127;

/// How long a job still ending (Slurm's COMPLETING: the kill wait, the epilog) is waited on
/// for its final state before its pilot is decided on what is known. A job that ended
/// without an exit status is waited on for one cycle, as the status may come with the next
/// poll.
pub const EXIT_WAIT_MS: u64 = 120_000;

/// The platform's limits, from its profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Caps {
    pub max_queued: u32,
    pub max_running: u32,
    /// Cores one pilot brings (nodes × cores per node).
    pub cores_per_pilot: u64,
}

/// How the provisioner behaves (from the manager's configuration).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// A job running this long without its agent registering is cancelled.
    pub register_timeout_ms: u64,
    /// A pilot with less walltime left than this is replaced (and no longer counted).
    pub replace_lead_ms: u64,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// A running pilot's agent idle this long, while nothing waits, is drained.
    pub idle_timeout_ms: u64,
}

impl Policy {
    /// The policy `[provision]` configures.
    pub fn of(settings: &ProvisionConfig) -> Policy {
        Policy {
            register_timeout_ms: ms(settings.register_timeout_secs),
            replace_lead_ms: ms(settings.replace_lead_secs),
            backoff_base_ms: ms(settings.backoff_base_secs),
            backoff_max_ms: ms(settings.backoff_max_secs),
            idle_timeout_ms: ms(settings.idle_timeout_secs),
        }
    }
}

/// Consecutive failures of one platform and when it may be tried again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Backoff {
    pub failures: u32,
    pub retry_at_ms: u64,
}

impl Backoff {
    /// After one more failure at `now_ms`: wait base × 2^(failures−1), at most `max`.
    pub fn failed(self, now_ms: u64, policy: &Policy) -> Backoff {
        let failures = self.failures.saturating_add(1);
        let factor = 1u64 << (failures - 1).min(30);
        let wait = policy
            .backoff_base_ms
            .saturating_mul(factor)
            .min(policy.backoff_max_ms);
        Backoff {
            failures,
            retry_at_ms: now_ms.saturating_add(wait),
        }
    }

    pub fn waiting(&self, now_ms: u64) -> bool {
        now_ms < self.retry_at_ms
    }
}

/// One tracked (non-final) pilot as the reconciler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PilotView<'a> {
    pub name: &'a str,
    /// `Queued` or `Running`.
    pub state: PilotState,
    /// What this cycle's poll said; `None` if the job was not polled (no batch id yet).
    pub job: Option<&'a JobState>,
    pub submitted_ms: u64,
    /// When the batch job was first seen running, before this cycle.
    pub job_started_ms: Option<u64>,
    pub walltime_end_ms: Option<u64>,
    /// Its agent holds no tasks (only meaningful when `Running`).
    pub agent_idle: bool,
    /// When its agent was first seen holding no tasks, in this idle stretch.
    pub idle_since_ms: Option<u64>,
    /// Its agent was already asked to drain.
    pub draining: bool,
    /// Its agent was declared lost (missed heartbeats) while its job may still run.
    pub agent_lost: bool,
    /// Its agent is still active or draining: the manager counts on it (and its leases).
    pub agent_live: bool,
    /// The manager asked its agent to drain (no work left for it, or an admin's order).
    pub drain_ordered: bool,
    /// When its job was first seen ending without an exit status, if it was (see
    /// [`Decisions::await_exit`]).
    pub awaiting_exit_since: Option<u64>,
}

/// One platform's situation at `now_ms`.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    pub now_ms: u64,
    /// Cores' worth of waiting tasks the platform could serve.
    pub demand_cores: u64,
    pub caps: Caps,
    pub policy: Policy,
    pub backoff: Backoff,
    pub pilots: &'a [PilotView<'a>],
}

/// A pilot's new state and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub pilot: String,
    pub state: PilotState,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Final states reached (ended, failed, cancelled).
    pub transitions: Vec<Transition>,
    /// Pilots whose batch job was first seen running this cycle.
    pub job_started: Vec<String>,
    /// Batch jobs to cancel (their pilots are in `transitions`).
    pub cancel: Vec<String>,
    /// Registered pilots whose agents should finish their tasks and leave.
    pub drain: Vec<String>,
    /// Pilots whose jobs are ending (Slurm COMPLETING), decided once the batch system
    /// gives the final state, which says why (127, or CANCELLED), or after
    /// [`EXIT_WAIT_MS`] on what is known; and those whose jobs ended without an exit
    /// status, decided next cycle.
    pub await_exit: Vec<String>,
    /// Registered pilots whose batch jobs ended under their live agents: the agents are
    /// gone, and what they hold goes back to the queues now.
    pub release: Vec<String>,
    /// Pilots (in `transitions`, failed) whose batch jobs ended without the manager
    /// asking: cancelled from outside (`scancel`, `qdel`), their node failed, or their
    /// agent died. Not a sign that the platform is broken.
    pub killed: Vec<String>,
    /// New pilots to submit.
    pub submit: u32,
    /// A pilot failed in a way that says the platform is broken: back off.
    pub back_off: bool,
}

/// Pilots that count as capacity: live and not about to reach their walltime.
fn counts_as_capacity(p: &PilotView<'_>, now_ms: u64, policy: &Policy) -> bool {
    match p.walltime_end_ms {
        Some(end) => end.saturating_sub(now_ms) > policy.replace_lead_ms,
        None => true,
    }
}

/// Decides one cycle for one platform.
pub fn decide(input: &Input<'_>) -> Decisions {
    let now = input.now_ms;
    let policy = &input.policy;
    let mut d = Decisions::default();
    let mut live: Vec<&PilotView<'_>> = Vec::new();
    for p in input.pilots.iter().filter(|p| !p.state.is_final()) {
        if observe_job(p, now, policy, &mut d) {
            live.push(p);
        }
    }

    // Capacity wanted, in pilots: enough for the demand, within the caps.
    let cap = u64::from(input.caps.max_running);
    let wanted = input
        .demand_cores
        .div_ceil(input.caps.cores_per_pilot.max(1))
        .min(cap);
    let capacity: Vec<&PilotView<'_>> = live
        .iter()
        .copied()
        .filter(|p| counts_as_capacity(p, now, policy))
        .collect();
    let have = capacity.len() as u64;

    if input.demand_cores == 0 {
        wind_down(&live, now, policy, &mut d);
        return d;
    }
    if have > wanted {
        cancel_surplus(&capacity, (have - wanted) as usize, &mut d);
        return d;
    }
    if d.back_off || input.backoff.waiting(now) {
        return d;
    }
    let queued_now = live
        .iter()
        .filter(|p| p.state == PilotState::Queued && !matches!(p.job, Some(JobState::Running)))
        .count() as u64;
    let room_queued = u64::from(input.caps.max_queued).saturating_sub(queued_now);
    let room_running = cap.saturating_sub(have);
    d.submit = (wanted - have).min(room_queued).min(room_running) as u32;
    d
}

/// What this cycle's poll says about one non-final pilot's job: records the transitions,
/// cancellations and back-off it calls for in `d`, and returns whether the pilot is still
/// live (counts for this cycle's capacity decisions).
fn observe_job(p: &PilotView<'_>, now: u64, policy: &Policy, d: &mut Decisions) -> bool {
    let registered = p.state == PilotState::Running;
    let ended = |d: &mut Decisions, state: PilotState, reason: String| {
        d.transitions.push(Transition {
            pilot: p.name.to_string(),
            state,
            reason,
        });
    };
    let job_gone = matches!(
        p.job,
        Some(JobState::Ending { .. } | JobState::Ended { .. } | JobState::Vanished)
    );
    if registered && job_gone && p.agent_live {
        d.release.push(p.name.to_string());
    }
    match p.job {
        Some(JobState::Ending { .. })
            if p.awaiting_exit_since
                .is_none_or(|since| now < since.saturating_add(EXIT_WAIT_MS)) =>
        {
            d.await_exit.push(p.name.to_string());
            // A registered pilot's job is gone all the same: it is no longer capacity.
            !registered
        }
        Some(JobState::Ending { reason }) => {
            let ended = JobState::Ended {
                exit_code: None,
                reason: reason.clone(),
            };
            let view = PilotView {
                job: Some(&ended),
                ..p.clone()
            };
            observe_job(&view, now, policy, d)
        }
        Some(JobState::Ended {
            exit_code: None, ..
        }) if p.awaiting_exit_since.is_none() => {
            d.await_exit.push(p.name.to_string());
            // A registered pilot's job is gone all the same: it is no longer capacity.
            !registered
        }
        Some(JobState::Ended { exit_code, reason }) => {
            let how = describe_end(*exit_code, reason);
            if *exit_code == Some(EXIT_AGENT_MISSING) && !registered {
                ended(
                    d,
                    PilotState::Failed,
                    format!("the agent binary is missing on the platform ({how})"),
                );
                d.back_off = true;
            } else if registered {
                registered_end(p, now, policy, &how, d);
            } else {
                ended(
                    d,
                    PilotState::Failed,
                    format!("batch job ended before its agent registered ({how})"),
                );
                d.back_off = true;
            }
            false
        }
        Some(JobState::Vanished) => {
            if registered {
                registered_end(p, now, policy, "no longer known to the batch system", d);
            } else {
                ended(
                    d,
                    PilotState::Failed,
                    "batch job vanished before its agent registered".into(),
                );
                d.back_off = true;
            }
            false
        }
        Some(JobState::Running | JobState::Held | JobState::Queued)
            if registered && p.agent_lost =>
        {
            ended(
                d,
                PilotState::Ended,
                "its agent stopped answering while the batch job still ran; cancelled".into(),
            );
            d.cancel.push(p.name.to_string());
            false
        }
        Some(JobState::Running) if !registered => {
            let since = p.job_started_ms.unwrap_or(now);
            if p.job_started_ms.is_none() {
                d.job_started.push(p.name.to_string());
            }
            if now.saturating_sub(since) >= policy.register_timeout_ms {
                ended(
                    d,
                    PilotState::Failed,
                    format!(
                        "batch job ran {}s without its agent registering; cancelled",
                        now.saturating_sub(since) / 1000
                    ),
                );
                d.cancel.push(p.name.to_string());
                d.back_off = true;
                false
            } else {
                true
            }
        }
        _ => true,
    }
}

/// The end of a registered pilot's batch job, `how` it ended: `ended` when the manager
/// asked for it (it drained the agent) or the walltime came, else `failed`, as one the
/// manager did not ask for (cancelled from outside, its node lost, its agent died).
fn registered_end(p: &PilotView<'_>, now: u64, policy: &Policy, how: &str, d: &mut Decisions) {
    let walltime_came = p
        .walltime_end_ms
        .is_some_and(|end| now.saturating_add(policy.replace_lead_ms) >= end);
    let (state, reason) = if p.drain_ordered || walltime_came {
        (PilotState::Ended, format!("batch job ended ({how})"))
    } else {
        d.killed.push(p.name.to_string());
        (
            PilotState::Failed,
            format!("batch job ended without the manager asking ({how})"),
        )
    };
    d.transitions.push(Transition {
        pilot: p.name.to_string(),
        state,
        reason,
    });
}

/// No work: queued pilots go away; idle agents are drained (their jobs then end).
/// Nothing waits: queued pilots are cancelled, and running ones whose agents have been
/// idle for the policy's idle timeout are drained.
fn wind_down(live: &[&PilotView<'_>], now: u64, policy: &Policy, d: &mut Decisions) {
    for p in live {
        match p.state {
            PilotState::Queued => {
                d.transitions.push(Transition {
                    pilot: p.name.to_string(),
                    state: PilotState::Cancelled,
                    reason: "no waiting tasks for this platform".into(),
                });
                d.cancel.push(p.name.to_string());
            }
            PilotState::Running
                if p.agent_idle
                    && !p.draining
                    && p.idle_since_ms.is_some_and(|since| {
                        now >= since.saturating_add(policy.idle_timeout_ms)
                    }) =>
            {
                d.drain.push(p.name.to_string());
            }
            _ => {}
        }
    }
}

/// Too many pilots: cancel the `surplus` newest queued pilots of `capacity` whose jobs have
/// not started.
fn cancel_surplus(capacity: &[&PilotView<'_>], surplus: usize, d: &mut Decisions) {
    let mut queued: Vec<&PilotView<'_>> = capacity
        .iter()
        .copied()
        .filter(|p| p.state == PilotState::Queued && p.job_started_ms.is_none())
        .filter(|p| !matches!(p.job, Some(JobState::Running)))
        .collect();
    queued.sort_by_key(|p| std::cmp::Reverse((p.submitted_ms, p.name)));
    for p in queued.into_iter().take(surplus) {
        d.transitions.push(Transition {
            pilot: p.name.to_string(),
            state: PilotState::Cancelled,
            reason: "more pilots than waiting tasks need".into(),
        });
        d.cancel.push(p.name.to_string());
    }
}

fn describe_end(exit_code: Option<i32>, reason: &str) -> String {
    match (exit_code, reason.is_empty()) {
        (Some(c), true) => format!("exit {c}"),
        (Some(c), false) => format!("exit {c}: {reason}"),
        (None, false) => reason.to_string(),
        (None, true) => "no exit status".into(),
    }
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod tests;
