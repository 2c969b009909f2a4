//! Whether the agent has been told to stop by a signal (SIGTERM or SIGINT: its batch job
//! cancelled, its node going down), known at once and in any thread: a flag set inside the
//! signal handler itself, and the signals still pending for the process. A run killed by a
//! signal is then told apart from one that died with its pilot without waiting for the
//! agent's own signal to travel through its event loop.
//!
//! A batch system that stops a job usually signals the agent no later than its tasks (Slurm
//! with cgroups freezes the job's cgroup and signals every process in it; PBS signals the
//! job's session in process order, the agent first). Not always: Slurm tracking processes
//! without cgroups signals them one by one, a task first as often as not. So a run killed
//! by a stop signal waits a moment for the agent's own ([`arrives_within`]) before it
//! counts as failed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The signals that stop the agent.
const STOP_SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

/// Set by the signal handler when a stop signal arrives.
static RECEIVED: AtomicBool = AtomicBool::new(false);

/// Installs the handler's flag (beside tokio's own handler for the same signals, which
/// drains the agent). Call it once, before tasks run.
pub fn watch() -> std::io::Result<()> {
    for sig in STOP_SIGNALS {
        // SAFETY: the action only stores to an atomic, which is async-signal-safe.
        unsafe { signal_hook_registry::register(sig, || RECEIVED.store(true, Ordering::SeqCst)) }?;
    }
    Ok(())
}

/// Whether a stop signal has been delivered to the agent or is pending for it.
pub fn received() -> bool {
    RECEIVED.load(Ordering::SeqCst) || pending()
}

/// Whether `signal` (what killed a run) is one that stops the agent.
pub fn is_stop_signal(signal: Option<libc::c_int>) -> bool {
    signal.is_some_and(|s| STOP_SIGNALS.contains(&s))
}

/// Whether a stop signal reaches the agent within `limit` (or already has). Listens before
/// it looks at the flag, so a signal between the two is not missed.
pub async fn arrives_within(limit: Duration) -> bool {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return received();
    };
    if received() {
        return true;
    }
    tokio::select! {
        _ = term.recv() => true,
        _ = int.recv() => true,
        _ = tokio::time::sleep(limit) => received(),
    }
}

/// Whether a stop signal is pending for this thread or the process (sent, its handler not
/// run yet).
fn pending() -> bool {
    // SAFETY: `set` is a live local that sigpending fills; sigismember only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigpending(&mut set) == 0
            && STOP_SIGNALS
                .iter()
                .any(|&sig| libc::sigismember(&set, sig) == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets SIGTERM's blocking in this thread.
    fn block_sigterm(how: libc::c_int) {
        // SAFETY: `set` is a live local; pthread_sigmask changes this thread's mask only.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            assert_eq!(libc::pthread_sigmask(how, &set, std::ptr::null_mut()), 0);
        }
    }

    #[test]
    fn a_stop_signal_is_seen_as_soon_as_it_is_sent_pending_or_handled() {
        watch().unwrap();
        assert!(!received(), "no stop signal yet");
        // Sent to this thread while it blocks it: pending, its handler not run.
        block_sigterm(libc::SIG_BLOCK);
        // SAFETY: signalling this thread, whose SIGTERM now runs the handler above (and no
        // longer ends the process).
        assert_eq!(
            unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGTERM) },
            0
        );
        assert!(
            !RECEIVED.load(Ordering::SeqCst) && received(),
            "seen while pending"
        );
        // Unblocked, it is delivered to this thread before pthread_sigmask returns.
        block_sigterm(libc::SIG_UNBLOCK);
        assert!(!pending() && RECEIVED.load(Ordering::SeqCst) && received());
    }
}
