//! Grants to the file stores of `[[storage]]`, and which applications may name them.
//!
//! How grants reach agents, and why they never expire under a running task: the manager
//! holds each store's secret and signs stateless grants (`hetpilot_transport::store_grant`),
//! one per (store, owner), lasting `store_grant_ttl_secs`. It sends fresh ones
//! - in every pull answer that leases tasks, for the stores those tasks use (so a task
//!   never arrives without its grant), and
//! - in every heartbeat answer, for the stores the tasks the agent holds use (so a grant is
//!   never older than one heartbeat interval while a task that needs it is queued or
//!   running, however long that is).
//!
//! The stores a task uses are those its application declares for every task and, for a
//! workflow task, those its own files name (`DagTask::stores`): an agent holding only a
//! workflow's tasks without store files gets no grant at all.
//!
//! The agent keeps the newest grant per (store, owner). Nothing is stored and nothing
//! can be revoked: a grant dies at its expiry, so the TTL bounds how long a leaked one is
//! worth anything. Signing is one HMAC per grant: cheap enough to do on every answer.
//! An application naming a store the manager has no `[[storage]]` entry for is refused at
//! submit.

use super::{Manager, ServiceError};
use crate::config::ManagerConfig;
use hetpilot_protocol::protocol::StoreGrant;
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::TaskRef;
use hetpilot_transport::store_grant::{SecretError, StoreSecret};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

/// The secrets of the configured stores, loaded at start-up.
pub struct StoreKeys {
    stores: BTreeMap<String, (String, StoreSecret)>,
    ttl_secs: u64,
}

impl StoreKeys {
    pub fn load(settings: &ManagerConfig) -> Result<StoreKeys, SecretError> {
        let stores = settings
            .storage
            .iter()
            .map(|s| {
                let secret = StoreSecret::load(&s.secret_file)?;
                Ok((
                    s.name.clone(),
                    (s.url.trim_end_matches('/').to_string(), secret),
                ))
            })
            .collect::<Result<_, SecretError>>()?;
        Ok(StoreKeys {
            stores,
            ttl_secs: settings.store_grant_ttl_secs,
        })
    }

    /// A grant to `owner`'s files on `store`, valid from `now` (unix seconds) for the TTL.
    fn grant(&self, store: &str, owner: &str, now: u64) -> Option<StoreGrant> {
        let (url, secret) = self.stores.get(store)?;
        let expires = now + self.ttl_secs;
        Some(StoreGrant {
            store: store.to_string(),
            owner: owner.to_string(),
            url: url.clone(),
            token: secret.issue(store, owner, expires),
            expires,
        })
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Manager {
    /// Refuses an application naming a store that is not configured here, in its
    /// declarations or (a workflow) in a task's own files.
    pub(super) fn check_stores(&self, spec: &AppSpec) -> Result<(), ServiceError> {
        let mut named = spec
            .file_templates()
            .map(|f| f.stores())
            .unwrap_or_default();
        if let Some(dag) = &spec.dag {
            named.extend(dag.stores());
        }
        let unknown: Vec<String> = named
            .into_iter()
            .filter(|s| !self.stores.stores.contains_key(s))
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let configured: Vec<&str> = self.stores.stores.keys().map(String::as_str).collect();
        let configured = match configured.is_empty() {
            true => "none is configured".to_string(),
            false => format!("configured: {}", configured.join(", ")),
        };
        let names: Vec<String> = unknown.iter().map(|s| format!("`{s}`")).collect();
        let what = match names.len() {
            1 => format!("store {} is", names[0]),
            _ => format!("stores {} are", names.join(", ")),
        };
        Err(ServiceError::BadRequest(format!(
            "{what} not configured on this manager ({configured}; see `[[storage]]`)"
        )))
    }

    /// Fresh grants for every (store, owner) the tasks `tasks` use.
    pub(super) fn store_grants(&self, tasks: impl IntoIterator<Item = TaskRef>) -> Vec<StoreGrant> {
        if self.stores.stores.is_empty() {
            return Vec::new();
        }
        let tasks: BTreeSet<TaskRef> = tasks.into_iter().collect();
        let wanted: BTreeSet<(String, String)> = {
            let control = self.control();
            let queues = control.queues();
            tasks
                .iter()
                .filter_map(|t| Some((queues.app(t.app)?, t.index)))
                .flat_map(|(a, index)| {
                    let owner = a.owner.clone();
                    a.task_stores(index)
                        .into_iter()
                        .map(move |s| (s, owner.clone()))
                })
                .collect()
        };
        let now = now_secs();
        wanted
            .iter()
            .filter_map(|(store, owner)| self.stores.grant(store, owner, now))
            .collect()
    }
}
