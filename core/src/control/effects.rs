//! What the inputs of one locked section did, for the shell to apply in one place: the
//! changes to persist (the queues' changes and the pilots' changed records), in the order
//! they were made, and whom to wake (see [`wake`](super::wake)). Every input adds to it;
//! the shell takes it once per section ([`Control::take_effects`]), queues the changes
//! for the store while the lock still orders them and delivers the wake as it releases
//! the lock, the same way at every call site. The simulator takes and drops it.

use super::{Control, Wake};
use crate::queue::Change;
use hetpilot_protocol::pilots::PilotRecord;

/// The effects of the inputs since the last [`Control::take_effects`].
#[must_use = "the changes are to be persisted and the wake delivered"]
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Effects {
    /// The queues' changes, to persist in this order.
    pub changes: Vec<Change>,
    /// Pilots' records as events changed them, to persist in this order.
    pub pilots: Vec<PilotRecord>,
    /// Whom to wake, and whether to plan again.
    pub wake: Wake,
}

impl Effects {
    /// Whether there is nothing to persist.
    pub fn nothing_to_persist(&self) -> bool {
        self.changes.is_empty() && self.pilots.is_empty()
    }
}

impl Control {
    /// The effects of the inputs since the last call (see the module doc).
    pub fn take_effects(&mut self) -> Effects {
        std::mem::take(&mut self.effects)
    }

    /// The effects so far, to read before they are taken.
    pub fn effects(&self) -> &Effects {
        &self.effects
    }

    /// Adds `changes` to the effects, and whom they wake; returns how many there were.
    pub(super) fn changed(&mut self, changes: Vec<Change>) -> usize {
        self.effects.wake.merge(Wake::of_changes(&changes));
        let n = changes.len();
        self.effects.changes.extend(changes);
        n
    }
}
