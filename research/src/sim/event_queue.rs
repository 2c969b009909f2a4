//! A time-ordered event queue whose simultaneous events come out in a seeded random order
//! (the paper's simulator breaks ties between pilots at random, Section 6.1).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rand::RngCore;

struct Entry<E> {
    time: f64,
    tie: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.time
            .total_cmp(&other.time)
            .then(self.tie.cmp(&other.tie))
    }
}

/// Min-queue on time; equal times pop in the order of a random key drawn at push.
pub(crate) struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
        }
    }
}

impl<E> EventQueue<E> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(capacity),
        }
    }

    /// Schedule `event` at `time` (seconds); `rng` draws its tie-break key.
    pub(crate) fn push(&mut self, time: f64, event: E, rng: &mut dyn RngCore) {
        self.heap.push(Reverse(Entry {
            time,
            tie: rng.next_u64(),
            event,
        }));
    }

    /// The earliest event and its time.
    pub(crate) fn pop(&mut self) -> Option<(f64, E)> {
        self.heap.pop().map(|Reverse(e)| (e.time, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn events_pop_in_time_order_and_ties_vary_with_the_seed() {
        let order = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut q = EventQueue::default();
            q.push(2.0, 'z', &mut rng);
            for c in ['a', 'b', 'c', 'd', 'e'] {
                q.push(1.0, c, &mut rng);
            }
            let mut out = Vec::new();
            while let Some((t, e)) = q.pop() {
                out.push((t, e));
            }
            out
        };
        let first = order(1);
        assert_eq!(first.last(), Some(&(2.0, 'z')));
        assert!(first.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(order(1), first, "same seed, same order");
        assert!((2..20).any(|s| order(s) != first), "ties never reordered");
    }
}
