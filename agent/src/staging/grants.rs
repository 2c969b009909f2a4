//! The grants to depots (file stores) the manager sent (with pulled tasks and in heartbeat
//! answers), newest per (store, owner). Transfers look their grant up when they start, so
//! a refreshed grant is used from the next transfer on.

use hetpilot_protocol::protocol::StoreGrant;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct Grants(Arc<Mutex<HashMap<(String, String), StoreGrant>>>);

impl Grants {
    /// Keeps each grant that lasts longer than the one held for its store and owner.
    pub fn update(&self, grants: Vec<StoreGrant>) {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for g in grants {
            let key = (g.store.clone(), g.owner.clone());
            if held.get(&key).is_none_or(|h| h.expires < g.expires) {
                held.insert(key, g);
            }
        }
    }

    /// The newest grant to `owner`'s files on `store`.
    pub fn get(&self, store: &str, owner: &str) -> Result<StoreGrant, String> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(store.to_string(), owner.to_string()))
            .cloned()
            .ok_or_else(|| {
                format!("no grant to {owner}'s files on store `{store}` came from the manager")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(owner: &str, expires: u64) -> StoreGrant {
        StoreGrant {
            store: "s".into(),
            owner: owner.into(),
            url: "http://h".into(),
            token: format!("{owner}.{expires}.00"),
            expires,
        }
    }

    #[test]
    fn the_newest_grant_per_owner_is_kept() {
        let g = Grants::default();
        g.update(vec![grant("alice", 10), grant("bob", 5)]);
        g.update(vec![grant("alice", 20)]);
        g.update(vec![grant("alice", 15)]);
        assert_eq!(g.get("s", "alice").unwrap().expires, 20);
        assert_eq!(g.get("s", "bob").unwrap().expires, 5);
        assert!(g
            .get("other", "alice")
            .unwrap_err()
            .contains("store `other`"));
    }
}
