//! The control plane's journal: every input it took, in the order it took them, with the
//! decisions a replay must reproduce (each lease's task attempts, each round's allocation).
//! Journaling is off unless the shell starts it (`hetpilot serve --journal FILE`); the
//! control plane only buffers entries, the shell writes them out (one JSON object a line).
//! [`replay`](super::simulation::replay) feeds a journal to a fresh control plane.

use super::pilot_book::{PilotEvent, PilotOutcome};
use super::{AgentJoin, Capacity, ControlSettings, ReportHistory, ResultClass, StagingProfile};
use crate::queue::{LeaseBatch, Partitions, ReportError};
use hetpilot_protocol::protocol::{TaskAttempt, TaskResult};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One input of the control plane (a method call with its arguments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case")]
pub(crate) enum Input {
    /// The journal's first line. `restored`: the control plane started from stored state,
    /// which the journal does not hold (such a journal cannot be replayed).
    Open {
        settings: ControlSettings,
        restored: bool,
    },
    Profiles {
        staging: BTreeMap<String, StagingProfile>,
        capacities: BTreeMap<String, Capacity>,
    },
    Submit {
        app: AppId,
        owner: String,
        spec: Box<AppSpec>,
        now_ms: u64,
    },
    Cancel {
        app: AppId,
        /// Journals written before cancellations were timed say 0.
        #[serde(default)]
        now_ms: u64,
    },
    Forget {
        app: AppId,
    },
    AgentJoined {
        join: AgentJoin,
        now_ms: u64,
    },
    Lease {
        agent: AgentId,
        max_slots: u32,
        now_ms: u64,
    },
    Started {
        agent: AgentId,
        tasks: Vec<TaskAttempt>,
        now_ms: u64,
    },
    Heartbeat {
        agent: AgentId,
        now_ms: u64,
    },
    Reconcile {
        agent: AgentId,
        seen_up_to_ms: u64,
        held: Vec<TaskAttempt>,
        now_ms: u64,
    },
    Report {
        agent: AgentId,
        results: Vec<TaskResult>,
        /// The store's attempts of the results that were not current leases.
        #[serde(default)]
        history: ReportHistory,
        now_ms: u64,
    },
    Expire {
        now_ms: u64,
    },
    Deregister {
        agent: AgentId,
        now_ms: u64,
    },
    Drain {
        agent: AgentId,
    },
    PilotEnded {
        agent: AgentId,
        reason: String,
        now_ms: u64,
    },
    Partitions {
        app: AppId,
        partitions: Partitions,
    },
    RoundBegan {
        unavailable: Vec<String>,
        now_ms: u64,
    },
    RoundFinished,
    PilotWindow {
        window_ms: u64,
    },
    Pilot {
        event: PilotEvent,
        now_ms: u64,
    },
}

/// A decision a replay must reproduce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Output {
    /// The task attempts a lease handed out, in order.
    Leased(Vec<TaskAttempt>),
    /// Cores per platform (in the view's platform order) of each application a round
    /// allocated.
    Allocation(Vec<(AppId, Vec<u32>)>),
    /// The call was refused, with the reason.
    Refused(String),
    /// The task attempts a lease handed out, in order, when some run as a variant: each
    /// with the variant's name (`None` for an application without variants).
    LeasedAs(Vec<(TaskAttempt, Option<String>)>),
    /// How each result of a report was recorded, in the report's order.
    Recorded(Vec<ResultClass>),
    /// What a pilot's event changed.
    Pilot(Box<PilotOutcome>),
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    #[serde(flatten)]
    pub(crate) input: Input,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output: Option<Output>,
}

/// The buffer of entries not yet taken by the shell.
#[derive(Debug, Default)]
pub(super) struct Journal {
    on: bool,
    restored: bool,
    entries: Vec<Entry>,
}

impl Journal {
    pub(super) fn restored(&mut self) {
        self.restored = true;
    }

    /// Whether inputs are journaled.
    pub(super) fn on(&self) -> bool {
        self.on
    }

    pub(super) fn start(&mut self, settings: &ControlSettings) {
        self.on = true;
        self.entries.push(Entry {
            input: Input::Open {
                settings: settings.clone(),
                restored: self.restored,
            },
            output: None,
        });
    }

    /// Records an input (built only when journaling is on).
    pub(super) fn input(&mut self, input: impl FnOnce() -> Input) {
        if self.on {
            self.entries.push(Entry {
                input: input(),
                output: None,
            });
        }
    }

    /// Records an input and the decision it led to.
    pub(super) fn decided(
        &mut self,
        input: impl FnOnce() -> Input,
        output: impl FnOnce() -> Output,
    ) {
        if self.on {
            self.entries.push(Entry {
                input: input(),
                output: Some(output()),
            });
        }
    }

    pub(super) fn take(&mut self) -> Vec<Entry> {
        std::mem::take(&mut self.entries)
    }
}

/// What a lease decided, as the journal records it.
pub(crate) fn lease_output(batch: &Result<LeaseBatch, ReportError>) -> Output {
    match batch {
        Ok(b) if b.variants.iter().any(Option::is_some) => Output::LeasedAs(
            b.tasks
                .iter()
                .zip(&b.variants)
                .map(|(t, v)| {
                    let at = TaskAttempt {
                        task: t.task,
                        attempt: t.attempt,
                    };
                    (at, v.clone())
                })
                .collect(),
        ),
        Ok(b) => Output::Leased(
            b.tasks
                .iter()
                .map(|t| TaskAttempt {
                    task: t.task,
                    attempt: t.attempt,
                })
                .collect(),
        ),
        Err(e) => Output::Refused(e.to_string()),
    }
}
