//! The control plane's side of pilots: every change to a pilot goes through
//! [`Control::pilot`] as an event, journaled with its outcome so a replay checks it, and
//! the book is read from here (the provisioner's tracked pilots, a group's hold on its
//! agents' leases, each agent's pilot).

use super::journal::{Input, Output};
use super::pilot_book::{PilotEvent, PilotOutcome};
use super::pilot_groups::PilotRefused;
use super::Control;
use hetpilot_protocol::pilots::PilotRecord;
use hetpilot_protocol::AgentId;
use std::collections::HashMap;

impl Control {
    /// Takes the pilots the store recorded (start-up only, before any event).
    pub fn restore_pilots(&mut self, records: Vec<PilotRecord>) {
        if !records.is_empty() {
            self.journal.restored();
        }
        self.pilots.restore(records);
    }

    /// How long after a group's first agent registered the others may join (the
    /// `[provision] register_timeout_secs`).
    pub fn set_pilot_window(&mut self, window_ms: u64) {
        self.journal.input(|| Input::PilotWindow { window_ms });
        self.pilots.set_window(window_ms);
    }

    /// Something happened to a pilot at `now_ms`: returns what changed, or why an agent's
    /// registration with the pilot's credential is refused.
    pub fn pilot(&mut self, event: PilotEvent, now_ms: u64) -> Result<PilotOutcome, PilotRefused> {
        let journaled = self.journal.on().then(|| event.clone());
        let arrival = matches!(event, PilotEvent::Created { .. });
        let outcome = self.pilots.apply(event, now_ms);
        if let Some(event) = journaled {
            let output = match &outcome {
                Ok(o) => Output::Pilot(Box::new(o.clone())),
                Err(e) => Output::Refused(e.to_string()),
            };
            self.journal
                .decided(|| Input::Pilot { event, now_ms }, || output);
        }
        if let Ok(o) = &outcome {
            // A new pilot's record is committed before the control plane hears of it (an
            // arrival: see the shell's `new_pilot`); every later change is to persist.
            if let (Some(record), false) = (&o.changed, arrival) {
                self.effects.pilots.push(record.clone());
            }
            // A whole group's agents may be leased tasks now.
            self.effects.wake.work |= o.whole;
        }
        outcome
    }

    /// Every pilot, by name.
    pub fn pilot_records(&self) -> impl Iterator<Item = &PilotRecord> {
        self.pilots.records()
    }

    /// Pilot `name`'s record.
    pub fn pilot_record(&self, name: &str) -> Option<&PilotRecord> {
        self.pilots.record(name)
    }

    /// The pilot each agent of a non-final pilot belongs to.
    pub fn agent_pilots(&self) -> &HashMap<u64, String> {
        self.pilots.agent_pilots()
    }

    /// The pilot `agent` belongs to, while it is not final.
    pub fn pilot_of(&self, agent: AgentId) -> Option<&str> {
        self.pilots.pilot_of(agent.0)
    }

    /// Whether `agent`'s pilot still admits agents at `now_ms`, so that the agent is
    /// leased nothing yet (see `pilot_groups`).
    pub fn held_for_its_group(&self, agent: AgentId, now_ms: u64) -> bool {
        self.pilots.holds(agent.0, now_ms)
    }

    /// Until when pilot `name`'s stored credential, valid until `expires_ms`, is to be
    /// accepted after a restart at `now_ms` (`None`: no longer).
    pub fn pilot_credential_until(&self, name: &str, expires_ms: u64, now_ms: u64) -> Option<u64> {
        self.pilots.credential_until(name, expires_ms, now_ms)
    }
}
