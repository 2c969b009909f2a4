//! Replaying a live manager's journal through a fresh control plane: every input is fed
//! to the same [`Control`] methods the live manager called, in the same order and at the
//! same clock, and every journaled decision (each lease's task attempts, each round's
//! allocation, what each pilot event changed) must come out identical. A difference names
//! the first input where the replay departed from the live run.

use super::scenario::{MAX_SLOTS, MAX_TASKS};
use crate::control::journal::{lease_output, Entry, Input, Output};
use crate::control::{Control, Measured, ReportAnswer, RoundDone};
use crate::sched::SchedError;

/// Why a journal cannot be replayed, or where the replay departed from it.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// No entry, or a first entry other than `open`.
    #[error("the journal is empty or does not start with its `open` line")]
    NoOpen,
    /// The live manager started from a store this journal does not hold.
    #[error("the journal starts from a restarted manager's stored state, which it does not hold; journal a run from a fresh data directory")]
    Restored,
    /// The `open` line's settings do not make a control plane.
    #[error("the journal's scheduler settings are refused: {0}")]
    Settings(#[from] SchedError),
    /// A submitted application that does not validate.
    #[error("line {line}: application {app}'s spec is refused: {reason}")]
    Spec {
        /// The entry's line, counting from 1.
        line: usize,
        /// The application.
        app: hetpilot_protocol::AppId,
        /// Why its spec is refused.
        reason: String,
    },
    /// An agent with more slots than a manager registers.
    #[error("line {line}: an agent of {slots} slots (a manager registers at most 4096)")]
    Slots {
        /// The entry's line, counting from 1.
        line: usize,
        /// The slots it claims.
        slots: u32,
    },
    /// A `round_finished` without a `round_began` before it.
    #[error("line {line}: a round finished that never began")]
    NoRound {
        /// The entry's line, counting from 1.
        line: usize,
    },
    /// The replay decided otherwise than the live manager: the first such entry.
    #[error("line {line} ({input}): the live manager decided {live:?}, the replay {replayed:?}")]
    Departed {
        /// The entry's line, counting from 1.
        line: usize,
        /// The kind of the entry's input, as the journal names it (e.g. `lease`).
        input: String,
        /// What the live manager decided.
        live: Box<Output>,
        /// What the replay decided.
        replayed: Box<Output>,
    },
}

/// What a replay went through.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ReplaySummary {
    /// Entries replayed.
    pub inputs: usize,
    /// Decisions compared (all identical).
    pub leases: usize,
    /// Task attempts those leases handed out.
    pub leased_tasks: usize,
    /// Rounds replayed (their allocations compared).
    pub rounds: usize,
    /// Pilot events replayed (what each changed compared).
    pub pilot_events: usize,
}

/// Replays `entries` (lines are counted from 1) and checks every decision.
pub fn replay(entries: impl IntoIterator<Item = Entry>) -> Result<ReplaySummary, ReplayError> {
    let mut entries = entries.into_iter();
    let control = match entries.next().map(|e| e.input) {
        Some(Input::Open { restored: true, .. }) => return Err(ReplayError::Restored),
        Some(Input::Open { settings, .. }) => Control::new(&settings, Measured::default())?,
        _ => return Err(ReplayError::NoOpen),
    };
    let mut replay = Replay {
        control,
        round: None,
        summary: ReplaySummary::default(),
    };
    for (i, entry) in entries.enumerate() {
        replay.step(i + 2, entry)?;
    }
    Ok(replay.summary)
}

struct Replay {
    control: Control,
    round: Option<RoundDone>,
    summary: ReplaySummary,
}

impl Replay {
    fn step(&mut self, line: usize, entry: Entry) -> Result<(), ReplayError> {
        self.summary.inputs += 1;
        let c = &mut self.control;
        let label = input_label(&entry.input);
        let replayed = match entry.input {
            Input::Open { .. } => return Err(ReplayError::NoOpen),
            Input::Profiles {
                staging,
                capacities,
            } => {
                c.use_profiles(staging, capacities);
                None
            }
            Input::Submit {
                app,
                owner,
                spec,
                now_ms,
            } => {
                let refused = |reason: String| ReplayError::Spec { line, app, reason };
                match spec.tasks.count() {
                    Some(n) if n <= MAX_TASKS => {}
                    n => {
                        return Err(refused(format!(
                            "{} tasks: a replay takes at most {MAX_TASKS}",
                            n.map_or("2^64".into(), |n| n.to_string())
                        )))
                    }
                }
                let template = spec.validate().map_err(|e| refused(e.to_string()))?;
                c.submit(app, owner, *spec, template, now_ms);
                None
            }
            Input::Cancel { app, now_ms } => {
                c.cancel(app, now_ms);
                None
            }
            Input::Forget { app } => {
                // Refused live too (the journal records the attempt): nothing changes.
                let _refused = c.forget(app);
                None
            }
            Input::AgentJoined { join, .. } if u64::from(join.slots) > MAX_SLOTS => {
                return Err(ReplayError::Slots {
                    line,
                    slots: join.slots,
                })
            }
            Input::AgentJoined { join, now_ms } => {
                c.agent_joined(join, now_ms);
                None
            }
            Input::Lease {
                agent,
                max_slots,
                now_ms,
            } => {
                self.summary.leases += 1;
                let batch = c.lease(agent, max_slots, now_ms);
                self.summary.leased_tasks += batch.as_ref().map_or(0, |b| b.tasks.len());
                Some(lease_output(&batch))
            }
            Input::Started {
                agent,
                tasks,
                now_ms,
            } => {
                let _ = c.started(agent, &tasks, now_ms);
                None
            }
            Input::Heartbeat { agent, now_ms } => {
                let _ = c.heartbeat(agent, now_ms);
                None
            }
            Input::Reconcile {
                agent,
                seen_up_to_ms,
                held,
                now_ms,
            } => {
                let _ = c.reconcile(agent, seen_up_to_ms, &held, now_ms);
                None
            }
            Input::Report {
                agent,
                results,
                history,
                now_ms,
            } => match c.record_report(agent, results, &history, now_ms) {
                Ok(ReportAnswer::Recorded { classes, .. }) => Some(Output::Recorded(classes)),
                Ok(ReportAnswer::NeedsHistory { missing, .. }) => Some(Output::Refused(format!(
                    "the journal lacks the stored attempts of results {missing:?}"
                ))),
                Err(e) => Some(Output::Refused(e.to_string())),
            },
            Input::Expire { now_ms } => {
                c.expire(now_ms);
                None
            }
            Input::Deregister { agent, now_ms } => {
                let _ = c.deregister(agent, now_ms);
                None
            }
            Input::Drain { agent } => {
                c.drain(agent);
                None
            }
            Input::PilotEnded {
                agent,
                reason,
                now_ms,
            } => {
                c.pilot_ended(agent, &reason, now_ms);
                None
            }
            Input::Partitions { app, partitions } => {
                c.set_partitions(app, partitions);
                None
            }
            Input::RoundBegan {
                unavailable,
                now_ms,
            } => {
                // The round's work depends only on what it copied here, so computing it
                // now gives what the live manager's blocking-pool thread computed.
                let unavailable = unavailable.into_iter().collect();
                self.round = c.begin_round(&unavailable, now_ms).map(|job| job.run());
                None
            }
            Input::PilotWindow { window_ms } => {
                c.set_pilot_window(window_ms);
                None
            }
            Input::Pilot { event, now_ms } => {
                self.summary.pilot_events += 1;
                Some(match c.pilot(event, now_ms) {
                    Ok(outcome) => Output::Pilot(Box::new(outcome)),
                    Err(e) => Output::Refused(e.to_string()),
                })
            }
            Input::RoundFinished => {
                let done = self.round.take().ok_or(ReplayError::NoRound { line })?;
                self.summary.rounds += 1;
                let warnings = c.finish_round(done);
                Some(c.round_output(&warnings))
            }
        };
        match (entry.output, replayed) {
            (Some(live), Some(replayed)) if live != replayed => Err(ReplayError::Departed {
                line,
                input: label,
                live: Box::new(live),
                replayed: Box::new(replayed),
            }),
            _ => Ok(()),
        }
    }
}

fn input_label(input: &Input) -> String {
    serde_json::to_value(input)
        .ok()
        .and_then(|v| v.get("input").and_then(|s| s.as_str()).map(str::to_string))
        .unwrap_or_default()
}
