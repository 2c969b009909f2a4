//! The time-ordered event queue every simulator runs on (`simulate live`'s world and the
//! research simulators): events come out by time, and events due at the same time by a
//! tie key the caller gives with each one — a seeded random draw where the paper breaks
//! ties at random, a sequence number for first in, first out, or a job's index — so each
//! simulator's order is deterministic and its own.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A simulator's clock reading: seconds as `f64` (ordered by `total_cmp`) or milliseconds
/// as `u64`.
pub trait EventTime: Copy {
    /// The order of two times.
    fn order(&self, other: &Self) -> Ordering;
}

impl EventTime for f64 {
    fn order(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

impl EventTime for u64 {
    fn order(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
}

struct Due<T, E> {
    time: T,
    tie: u64,
    event: E,
}

impl<T: EventTime, E> PartialEq for Due<T, E> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T: EventTime, E> Eq for Due<T, E> {}

impl<T: EventTime, E> PartialOrd for Due<T, E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: EventTime, E> Ord for Due<T, E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.time.order(&other.time).then(self.tie.cmp(&other.tie))
    }
}

/// A min-queue on (time, tie key).
pub struct EventQueue<T, E> {
    heap: BinaryHeap<Reverse<Due<T, E>>>,
}

impl<T: EventTime, E> Default for EventQueue<T, E> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
        }
    }
}

impl<T: EventTime, E> EventQueue<T, E> {
    /// An empty queue with room for `capacity` events.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(capacity),
        }
    }

    /// Schedules `event` at `time`; among events due at the same time, smaller `tie`
    /// keys come out first.
    pub fn push(&mut self, time: T, tie: u64, event: E) {
        self.heap.push(Reverse(Due { time, tie, event }));
    }

    /// The earliest event and its time.
    pub fn pop(&mut self) -> Option<(T, E)> {
        self.heap.pop().map(|Reverse(d)| (d.time, d.event))
    }

    /// The earliest event's time, and the event, without taking it.
    pub fn peek(&self) -> Option<(T, &E)> {
        self.heap.peek().map(|Reverse(d)| (d.time, &d.event))
    }

    /// Every due event, in no particular order.
    pub fn events(&self) -> impl Iterator<Item = &E> {
        self.heap.iter().map(|Reverse(d)| &d.event)
    }

    /// How many events are due.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is due.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_then_by_tie_key() {
        let mut q = EventQueue::default();
        q.push(2.0, 0, 'z');
        for (tie, c) in [(5, 'a'), (1, 'b'), (3, 'c')] {
            q.push(1.0, tie, c);
        }
        q.push(-0.5, 9, 'n');
        assert_eq!(q.peek(), Some((-0.5, &'n')));
        assert_eq!(q.len(), 5);
        assert_eq!(q.events().filter(|e| **e == 'a').count(), 1);
        let mut out = Vec::new();
        while let Some((t, e)) = q.pop() {
            out.push((t, e));
        }
        assert_eq!(
            out,
            [(-0.5, 'n'), (1.0, 'b'), (1.0, 'c'), (1.0, 'a'), (2.0, 'z')]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn millisecond_clocks_with_sequence_numbers_are_first_in_first_out() {
        let mut q = EventQueue::with_capacity(4);
        for (seq, (at, what)) in [(10u64, "late"), (5, "first"), (5, "second")]
            .into_iter()
            .enumerate()
        {
            q.push(at, seq as u64, what);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [(5, "first"), (5, "second"), (10, "late")]);
    }
}
