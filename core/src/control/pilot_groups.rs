//! A pilot's agents as one group: the rules its one registration credential follows, and
//! what the group's agents may do while it is still admitting agents.
//!
//! A pilot of N nodes starts one agent per node, all with the pilot's credential. The
//! credential admits at most N registrations, each for the pilot it was made for and from
//! a node (hostname) not yet in the group; it admits them only while the pilot is not final
//! and within the registration window (`[provision] register_timeout_secs`) after its first
//! agent registered. Once the N-th agent claimed it, or the window passed, it admits no
//! agent; it still answers, until the window passes, a registration that one of the group's
//! own agents tries again with its own key after the answer was lost (the shell's
//! `registration_retry`); it is revoked when the pilot ends. So it never outlives its job
//! as a reusable token. While it still admits agents, the group's agents are leased no
//! task: no task can read the credential file (which multi-node agents keep) and register
//! agents of its own.

use hetpilot_protocol::pilots::{PilotMember, PilotRecord};
use std::collections::HashMap;

/// Why a registration with a pilot's credential is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PilotRefused {
    /// The pilot is final, whole, past its window, or unknown.
    #[error("pilot `{0}` is no longer waiting for its agent")]
    NoLongerWaiting(String),
    /// An agent of the group runs (or is registering) on that node already.
    #[error("pilot `{pilot}` already has an agent on node `{hostname}`: one agent per node")]
    NodeTaken {
        /// The pilot.
        pilot: String,
        /// The node asked for twice.
        hostname: String,
    },
}

/// The group state besides the pilots' records: registrations under way, and each
/// agent's pilot.
#[derive(Debug, Default)]
pub(super) struct Groups {
    /// Per pilot, the nodes whose agents claimed the credential but are not linked yet.
    pending: HashMap<String, Vec<String>>,
    /// The pilot of each agent of a non-final pilot.
    agent_pilot: HashMap<u64, String>,
    /// How long after a group's first registration the others may still join (ms).
    pub(super) window_ms: u64,
}

impl Groups {
    /// Indexes `r`'s agents (at start, from the store).
    pub(super) fn index(&mut self, r: &PilotRecord) {
        if !r.state.is_final() {
            for agent in r.agent_ids() {
                self.agent_pilot.insert(agent, r.name.clone());
            }
        }
    }

    /// Whether `r`'s credential still admits agents at `now_ms`.
    pub(super) fn admitting(&self, r: &PilotRecord, now_ms: u64) -> bool {
        r.awaits_members()
            && r.registered_ms
                .is_none_or(|first| now_ms < self.window_end(first))
    }

    /// When the registration window of a group whose first agent registered at `first_ms`
    /// closes: no agent joins after it, and no registration is answered again.
    pub(super) fn window_end(&self, first_ms: u64) -> u64 {
        first_ms.saturating_add(self.window_ms)
    }

    /// The pilot of each agent of a non-final pilot.
    pub(super) fn agent_pilots(&self) -> &HashMap<u64, String> {
        &self.agent_pilot
    }

    /// The pilot `agent` belongs to, if any.
    pub(super) fn pilot_of(&self, agent: u64) -> Option<&str> {
        self.agent_pilot.get(&agent).map(String::as_str)
    }

    /// Admits one more agent of `r`, on node `hostname`: refused unless the credential
    /// still admits agents and no agent of the group is on that node. Returns, when this
    /// was its last admission, when its registration window closes (it answers only
    /// retried registrations until then).
    pub(super) fn claim(
        &mut self,
        r: &PilotRecord,
        hostname: &str,
        now_ms: u64,
    ) -> Result<Option<u64>, PilotRefused> {
        if !self.admitting(r, now_ms) {
            return Err(PilotRefused::NoLongerWaiting(r.name.clone()));
        }
        let window_end = self.window_end(r.registered_ms.unwrap_or(now_ms));
        let pending = self.pending.entry(r.name.clone()).or_default();
        let taken = r.members.len() + pending.len();
        let nodes = r.nodes as usize;
        if taken >= nodes {
            // Every node's agent claimed it already (some not linked yet).
            return Err(PilotRefused::NoLongerWaiting(r.name.clone()));
        }
        if r.members.iter().any(|m| m.hostname == hostname) || pending.iter().any(|h| h == hostname)
        {
            return Err(PilotRefused::NodeTaken {
                pilot: r.name.clone(),
                hostname: hostname.to_string(),
            });
        }
        pending.push(hostname.to_string());
        Ok((taken + 1 == nodes).then_some(window_end))
    }

    /// Links `member` to pilot `name` (its claim made earlier).
    pub(super) fn join(&mut self, name: &str, member: &PilotMember) {
        if let Some(pending) = self.pending.get_mut(name) {
            pending.retain(|h| *h != member.hostname);
        }
        self.agent_pilot.insert(member.agent, name.to_string());
    }

    /// Forgets the group of `r` once it is final.
    pub(super) fn disband(&mut self, r: &PilotRecord) {
        self.pending.remove(&r.name);
        for agent in r.agent_ids() {
            self.agent_pilot.remove(&agent);
        }
    }
}
