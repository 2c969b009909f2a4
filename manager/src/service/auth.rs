//! Tokens and whom they belong to. Tokens are 256-bit random strings shown once; only their
//! SHA-256 is stored, so a copy of the database grants nothing.

pub use crate::db::token_id;
use crate::source_ranges::SourceRanges;
use hetpilot_protocol::AgentId;
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::RwLock;
use tokio::sync::futures::Notified;
use tokio::sync::Notify;

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    User {
        name: String,
        admin: bool,
    },
    /// May register agents of one platform until it expires, from `register_from` only
    /// where that is set.
    AgentRegistration {
        platform: String,
        expires_ms: u64,
        /// The token's id, as `hetpilot token list` shows it (see [`token_id`]).
        token_id: String,
        register_from: Option<SourceRanges>,
    },
    /// May register the agent of one pilot, once, until it expires.
    PilotRegistration {
        platform: String,
        pilot: String,
        expires_ms: u64,
    },
    Agent(AgentId),
}

/// A new token; the prefix says what kind it is (`hpu_` user, `hpr_` registration, `hpa_` agent).
pub fn new_token(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

pub fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Every valid token's hash and its principal.
#[derive(Default)]
pub struct Tokens {
    by_hash: RwLock<HashMap<String, Principal>>,
    /// Woken at every revocation, so that requests waiting on a token (long polls) can
    /// check it is still valid.
    revoked: Notify,
}

impl Tokens {
    pub fn insert(&self, token_hash: String, who: Principal) {
        self.by_hash
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token_hash, who);
    }

    /// Revokes a token by its hash.
    pub fn remove(&self, token_hash: &str) {
        self.by_hash
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(token_hash);
        self.revoked.notify_waiters();
    }

    /// Makes a registration token expire at `until_ms` at the latest.
    pub fn expire_by(&self, token_hash: &str, until_ms: u64) {
        let mut map = self.by_hash.write().unwrap_or_else(|p| p.into_inner());
        if let Some(
            Principal::AgentRegistration { expires_ms, .. }
            | Principal::PilotRegistration { expires_ms, .. },
        ) = map.get_mut(token_hash)
        {
            *expires_ms = (*expires_ms).min(until_ms);
        }
    }

    /// Revokes every token whose principal matches `which`; returns how many.
    pub fn revoke_where(&self, which: impl Fn(&Principal) -> bool) -> usize {
        let mut map = self.by_hash.write().unwrap_or_else(|p| p.into_inner());
        let before = map.len();
        map.retain(|_, who| !which(who));
        let revoked = before - map.len();
        drop(map);
        if revoked > 0 {
            self.revoked.notify_waiters();
        }
        revoked
    }

    /// Completes at the next revocation; `enable` it before checking a token, so that a
    /// revocation between the check and the wait is not missed.
    pub fn next_revocation(&self) -> Notified<'_> {
        self.revoked.notified()
    }

    /// Whether any valid token's principal matches `which`.
    pub fn any(&self, which: impl Fn(&Principal) -> bool) -> bool {
        self.by_hash
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .any(which)
    }

    /// The hashes of valid registration tokens starting with `prefix`.
    pub fn registration_hashes(&self, prefix: &str) -> Vec<String> {
        self.by_hash
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(h, who)| {
                h.starts_with(prefix) && matches!(who, Principal::AgentRegistration { .. })
            })
            .map(|(h, _)| h.clone())
            .collect()
    }

    /// The principal of a presented token, if it is valid and not expired.
    pub fn resolve(&self, token: &str, now_ms: u64) -> Option<Principal> {
        let who = self
            .by_hash
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&hash(token))
            .cloned()?;
        match who {
            Principal::AgentRegistration { expires_ms, .. }
            | Principal::PilotRegistration { expires_ms, .. }
                if expires_ms <= now_ms =>
            {
                None
            }
            who => Some(who),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_resolve_only_while_valid() {
        let tokens = Tokens::default();
        let t = new_token("hpr_");
        assert_eq!(t.len(), 4 + 64);
        tokens.insert(
            hash(&t),
            Principal::AgentRegistration {
                platform: "p".into(),
                expires_ms: 100,
                token_id: token_id(&hash(&t)),
                register_from: None,
            },
        );
        assert!(tokens.resolve(&t, 99).is_some());
        assert!(tokens.resolve(&t, 100).is_none(), "expired");
        assert!(tokens.resolve("hpr_00", 0).is_none());
        assert_ne!(new_token("x"), new_token("x"));
    }
}
