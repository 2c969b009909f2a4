//! Large-body slots: at most `limits.max_large_requests` submit bodies are read at once,
//! and one caller holds at most `limits.max_large_requests_per_user` of them. A caller
//! past its share waits for one of its own slots, not for everyone's, so one user's slow
//! bodies leave the other slots to other users (`body_deadline` bounds how long a body
//! holds one).

use super::rate;
use crate::service::Principal;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The slots of one kind of large request.
pub struct LargeBodySlots {
    total: Arc<Semaphore>,
    per_caller: usize,
    /// Each caller holding or waiting for a slot: its own slots, and how many requests
    /// hold or wait for one (the entry goes when none do).
    callers: Mutex<HashMap<String, (Arc<Semaphore>, usize)>>,
}

impl LargeBodySlots {
    /// `total` slots, at most `per_caller` of them for one caller (both at least one).
    pub fn new(total: usize, per_caller: usize) -> Arc<LargeBodySlots> {
        Arc::new(LargeBodySlots {
            total: Arc::new(Semaphore::new(total.max(1))),
            per_caller: per_caller.max(1),
            callers: Mutex::default(),
        })
    }

    /// Waits for one of `key`'s slots, then for one of all.
    async fn take(self: &Arc<Self>, key: String) -> Slot {
        let own = {
            let mut callers = self.callers.lock().unwrap_or_else(|p| p.into_inner());
            let (own, users) = callers
                .entry(key.clone())
                .or_insert_with(|| (Arc::new(Semaphore::new(self.per_caller)), 0));
            *users += 1;
            own.clone()
        };
        // Built before waiting, so that a request dropped while it waits still leaves.
        let mut slot = Slot {
            slots: self.clone(),
            key,
            permits: Vec::with_capacity(2),
        };
        for semaphore in [own, self.total.clone()] {
            let permit = semaphore
                .acquire_owned()
                .await
                .expect("slot semaphores are never closed");
            slot.permits.push(permit);
        }
        slot
    }
}

/// A slot held (or being waited for) by one request.
struct Slot {
    slots: Arc<LargeBodySlots>,
    key: String,
    /// The caller's own permit, then one of all.
    permits: Vec<OwnedSemaphorePermit>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut callers = self.slots.callers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, users)) = callers.get_mut(&self.key) {
            *users -= 1;
            if *users == 0 {
                callers.remove(&self.key);
            }
        }
    }
}

/// Runs the request holding one of its caller's slots.
pub async fn hold(State(slots): State<Arc<LargeBodySlots>>, req: Request, next: Next) -> Response {
    let key = rate::key(req.extensions().get::<Principal>());
    let _slot = slots.take(key).await;
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    /// A slot of `key`'s if one is free now (a free slot is taken on the first poll).
    fn taken(slots: &Arc<LargeBodySlots>, key: &str) -> Option<Slot> {
        slots.take(key.into()).now_or_never()
    }

    #[test]
    fn one_caller_holds_at_most_its_share_and_others_get_the_rest() {
        let slots = LargeBodySlots::new(4, 2);
        let bob1 = taken(&slots, "bob").expect("bob's first");
        let _bob2 = taken(&slots, "bob").expect("bob's second");
        assert!(taken(&slots, "bob").is_none(), "bob is at his share");
        let _alice1 = taken(&slots, "alice").expect("alice's first");
        let _alice2 = taken(&slots, "alice").expect("alice's second");
        assert!(taken(&slots, "carol").is_none(), "all four are held");
        drop(bob1);
        assert!(taken(&slots, "carol").is_some(), "bob gave one back");
    }

    #[test]
    fn a_callers_entry_goes_with_its_last_slot_also_when_it_gave_up_waiting() {
        let slots = LargeBodySlots::new(1, 1);
        let held = taken(&slots, "bob").expect("bob's slot");
        assert!(taken(&slots, "bob").is_none(), "a second waits");
        assert!(taken(&slots, "alice").is_none(), "the only slot is held");
        assert_eq!(slots.callers.lock().unwrap().len(), 1, "alice's went");
        drop(held);
        assert!(slots.callers.lock().unwrap().is_empty(), "bob's went");
    }
}
