//! The per-user task quotas (`[quotas]`), checked and reserved in one step: a submit holds
//! its tasks against its owner's quotas from the check until they are in the queues, so
//! concurrent submits of one user cannot each pass the same check while the first one's
//! tasks are still on their way to the store.

use super::{Manager, ServiceError};
use std::collections::HashMap;
use std::sync::Mutex;

/// Tasks of submits that passed the quota check and are not in the queues yet, per owner.
#[derive(Default)]
pub struct Reservations {
    pending: Mutex<HashMap<String, u64>>,
}

/// One submit's reserved tasks, given back when dropped (once they are in the queues, or
/// when the submit failed).
pub struct Reserved<'a> {
    reservations: &'a Reservations,
    owner: String,
    tasks: u64,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        let mut pending = self
            .reservations
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(held) = pending.get_mut(&self.owner) {
            *held = held.saturating_sub(self.tasks);
            if *held == 0 {
                pending.remove(&self.owner);
            }
        }
    }
}

impl Manager {
    /// Refuses an application whose tasks would exceed the owner's quotas, counting the
    /// tasks of the owner's submits still in flight; else reserves them.
    pub(super) fn reserve_tasks(
        &self,
        owner: &str,
        tasks: u64,
    ) -> Result<Reserved<'_>, ServiceError> {
        let quotas = &self.settings.quotas;
        if tasks > quotas.tasks_per_submit {
            return Err(ServiceError::Quota(format!(
                "field `tasks`: {tasks} tasks is more than the {} one application may have \
                 (quotas.tasks_per_submit); split it into several applications",
                quotas.tasks_per_submit
            )));
        }
        // Held across the count, so that no other submit of this owner checks meanwhile.
        let mut pending = self
            .quota_reservations
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let in_flight = pending.get(owner).copied().unwrap_or(0);
        let have = self.control().queues().owner_tasks(owner);
        let queued = have.queued.saturating_add(in_flight);
        if queued.saturating_add(tasks) > quotas.queued_tasks_per_user {
            return Err(ServiceError::Quota(format!(
                "{owner} already has {queued} tasks queued or running; {tasks} more would pass \
                 the quota of {} (quotas.queued_tasks_per_user): wait for some to finish",
                quotas.queued_tasks_per_user
            )));
        }
        let stored = have.stored.saturating_add(in_flight);
        if stored.saturating_add(tasks) > quotas.stored_tasks_per_user {
            return Err(ServiceError::Quota(format!(
                "{owner} already has {stored} tasks kept by the manager, ended ones included; \
                 {tasks} more would pass the quota of {} (quotas.stored_tasks_per_user): \
                 forget ended applications with `hetpilot app forget ID`, or wait for the \
                 retention policy to forget them",
                quotas.stored_tasks_per_user
            )));
        }
        *pending.entry(owner.to_string()).or_insert(0) += tasks;
        Ok(Reserved {
            reservations: &self.quota_reservations,
            owner: owner.to_string(),
            tasks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::test_support;
    use hetpilot_protocol::spec::AppSpec;
    use std::sync::Arc;

    fn array(n: u64) -> AppSpec {
        serde_json::from_value(serde_json::json!({
            "name": "burst", "command": "true", "tasks": {"array": {"start": 0, "end": n - 1}}
        }))
        .unwrap()
    }

    /// Each submit's quota check happens before its store commit is awaited: without the
    /// reservation, every submit of a burst passes the check against the same count.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_burst_of_concurrent_submits_cannot_pass_the_quota_together() {
        let dir = tempfile::tempdir().unwrap();
        let quota = [("quotas.queued_tasks_per_user", "10".to_string())];
        let (_, m, admin) = test_support::open(dir.path(), &quota);
        let alice = Arc::new(test_support::user(&m, &admin, "alice").await);
        let submits: Vec<_> = (0..16)
            .map(|_| {
                let (m, alice) = (Arc::clone(&m), Arc::clone(&alice));
                tokio::spawn(async move { m.submit(&alice, array(5)).await })
            })
            .collect();
        let mut accepted = 0;
        for s in submits {
            match s.await.unwrap() {
                Ok(_) => accepted += 1,
                Err(ServiceError::Quota(msg)) => {
                    assert!(msg.contains("quotas.queued_tasks_per_user"), "{msg}")
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(accepted, 2, "16 submits of 5 tasks against a quota of 10");
        let have = m.control().queues().owner_tasks("alice");
        assert_eq!(have.queued, 10);
        // Nothing stays reserved: a refused or finished submit gives its tasks back.
        assert!(m.quota_reservations.pending.lock().unwrap().is_empty());
    }
}
