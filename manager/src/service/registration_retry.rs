//! Registrations tried again after their answer was lost. An agent sends a random key with
//! every try of its registration; the manager keeps the key's hash (in memory and in the
//! agent's row) and, for each agent it has not heard from since it registered, the
//! agent's credential hash. A try whose key matches such an agent, on the same platform,
//! node and pilot, gets that agent back with a fresh credential (the one it never received
//! is revoked) instead of a refusal as a second agent on its node: so a manager killed
//! between recording a registration and answering it costs neither the pilot nor its
//! tasks. The agent's first pull or heartbeat shows the answer arrived and ends this.
//!
//! A pilot's credential still answers such retries for its registration window after its
//! last node's agent registered (see the core's `control::pilot_groups`); it admits no new agent then.

use super::{auth, Manager, Principal, ServiceError};
use crate::db::Write;
use crate::queue::AgentState;
use hetpilot_protocol::protocol::{RegisterRequest, RegisterResponse};
use hetpilot_protocol::AgentId;

/// What the manager keeps of an agent it has not heard from since it registered.
struct Unanswered {
    key_hash: String,
    credential_hash: String,
}

/// The agents not heard from since their registration, with their keys.
#[derive(Default)]
pub(super) struct UnansweredRegistrations(dashmap::DashMap<AgentId, Unanswered>);

impl UnansweredRegistrations {
    /// `agent` registered (or was recovered as active) with a key of hash `key_hash`.
    pub(super) fn recorded(&self, agent: AgentId, key_hash: String, credential_hash: String) {
        self.0.insert(
            agent,
            Unanswered {
                key_hash,
                credential_hash,
            },
        );
    }

    /// `agent` called with its own credential: its registration's answer arrived.
    pub(super) fn heard_from(&self, agent: AgentId) {
        // Every pull and heartbeat comes here, almost always for an agent long answered:
        // a look under the shard's read lock spares them its write lock.
        if self.0.contains_key(&agent) {
            self.0.remove(&agent);
        }
    }

    /// `agent` left or was lost: its registration is not answered again.
    pub(super) fn ended(&self, agent: AgentId) {
        self.0.remove(&agent);
    }

    /// How many agents are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// The unanswered agent whose key has hash `key_hash`.
    fn find(&self, key_hash: &str) -> Option<AgentId> {
        self.0
            .iter()
            .find(|e| e.value().key_hash == key_hash)
            .map(|e| *e.key())
    }
}

impl Manager {
    /// The answer to `req` if it is a retry of a registration already recorded (see the
    /// module doc); `None` when it is not, and it registers as a new agent (or is refused).
    pub(super) async fn registration_retried(
        &self,
        req: &RegisterRequest,
        pilot: Option<&str>,
    ) -> Result<Option<RegisterResponse>, ServiceError> {
        let Some(key) = &req.registration_key else {
            return Ok(None);
        };
        let key_hash = auth::hash(key);
        let Some(id) = self.unanswered.find(&key_hash) else {
            return Ok(None);
        };
        let (slots, cadence) = {
            let control = self.control();
            let Some(a) = control.queues().agent(id) else {
                return Ok(None);
            };
            let same = a.state == AgentState::Active
                && a.platform == req.platform
                && a.hostname == req.hostname
                && control.pilot_of(id) == pilot;
            if !same {
                return Ok(None);
            }
            (a.slots, control.queues().cadence())
        };
        let credential = auth::new_token("hpa_");
        let hash = auth::hash(&credential);
        // One swap at a time per agent (racing retries end with one working credential),
        // its write queued in the same order as the swaps.
        let committed = {
            let Some(mut entry) = self.unanswered.0.get_mut(&id) else {
                return Ok(None);
            };
            if entry.key_hash != key_hash {
                return Ok(None);
            }
            let old = std::mem::replace(&mut entry.credential_hash, hash.clone());
            let committed = self.writer.queue(Write::AgentCredential {
                agent: id,
                credential_hash: hash.clone(),
            });
            self.tokens.remove(&old);
            self.tokens.insert(hash, Principal::Agent(id));
            committed
        };
        committed.await?;
        tracing::info!(agent = %id, platform = %req.platform, host = %req.hostname,
            "agent registration tried again after its answer was lost: same agent, new credential");
        Ok(Some(super::agents::register_answer(
            id, credential, slots, cadence,
        )))
    }
}
