//! When the agent last heard from its manager, and when it stops waiting for it.
//!
//! An agent rides out a manager restart: it keeps running its tasks and retries its
//! calls. But a manager that never comes back (its host gone, the service removed) would
//! leave the pilot holding its batch allocation, and its tasks running, until the
//! walltime ends. After `give_up` of silence (no answer of any kind to any call) the
//! agent stops: it kills its tasks, whose runs the manager has long since given to other
//! agents, and exits. Parsl's workers and HyperQueue's (`--on-server-lost=stop`) do
//! the same, sooner.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Shared by every clone of the agent's API client.
#[derive(Clone, Debug)]
pub struct Contact {
    since: Instant,
    /// Milliseconds after `since` at which the manager last answered.
    last_ms: Arc<AtomicU64>,
    give_up: Duration,
}

impl Contact {
    /// Counting from now, as if the manager had just answered.
    pub fn new(give_up: Duration) -> Contact {
        Contact {
            since: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
            give_up,
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The manager answered (with anything: even a refusal shows it is there).
    pub fn heard(&self) {
        self.last_ms.fetch_max(self.elapsed_ms(), Ordering::Relaxed);
    }

    /// How long the manager has been silent, once that is `give_up` or more.
    pub fn gave_up(&self) -> Option<Duration> {
        let silent = Duration::from_millis(
            self.elapsed_ms()
                .saturating_sub(self.last_ms.load(Ordering::Relaxed)),
        );
        (silent >= self.give_up).then_some(silent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_counts_from_the_last_answer() {
        let c = Contact::new(Duration::from_secs(3600));
        assert_eq!(c.gave_up(), None);
        // `--give-up-secs 18446744073709551615` waits forever, without overflowing.
        assert_eq!(Contact::new(Duration::from_secs(u64::MAX)).gave_up(), None);
        let zero = Contact::new(Duration::ZERO);
        assert!(
            zero.gave_up().is_some(),
            "a zero allowance gives up at once"
        );
        let shared = zero.clone();
        shared.heard();
        // Heard through a clone, and still over a zero allowance.
        assert!(zero.gave_up().unwrap() < Duration::from_secs(1));
    }
}
