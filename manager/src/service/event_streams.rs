//! Open task-event streams per user: each user holds at most
//! `limits.max_event_streams_per_user` at once, so one user cannot tie up the manager's
//! connections and readers with streams; past it a new stream is refused (429).

use super::ServiceError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How many streams each user holds open.
#[derive(Debug, Default)]
pub(super) struct StreamSlots {
    open: Arc<Mutex<HashMap<String, usize>>>,
}

/// One open stream of one user; dropping it (the stream ended or its client left) frees it.
#[derive(Debug)]
pub struct StreamSlot {
    open: Arc<Mutex<HashMap<String, usize>>>,
    user: String,
}

impl StreamSlots {
    /// A slot for one more stream of `user`, if it holds fewer than `cap`.
    pub(super) fn take(&self, user: &str, cap: usize) -> Result<StreamSlot, ServiceError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let held = open.entry(user.to_string()).or_insert(0);
        if *held >= cap {
            return Err(ServiceError::TooMany(format!(
                "you hold {held} task-event streams open, the most one user may \
                 (`limits.max_event_streams_per_user`): close one first"
            )));
        }
        *held += 1;
        Ok(StreamSlot {
            open: self.open.clone(),
            user: user.to_string(),
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = open.get_mut(&self.user) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                open.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_holds_at_most_the_cap_and_a_dropped_slot_frees_one() {
        let slots = StreamSlots::default();
        let first = slots.take("ann", 2).unwrap();
        let _second = slots.take("ann", 2).unwrap();
        assert!(matches!(
            slots.take("ann", 2),
            Err(ServiceError::TooMany(_))
        ));
        let _other_user = slots.take("bob", 2).expect("the cap is per user");
        drop(first);
        let _again = slots.take("ann", 2).expect("a dropped slot is free again");
    }
}
