//! What the manager's integration tests share: waiting on a condition with a deadline
//! (the end-to-end crate's `wait_until`, for tests that cannot depend on that crate).

use std::time::{Duration, Instant};

/// Calls `check` every 20 ms until it returns `Ok`, for at most `timeout`; then panics
/// naming `what` and the last thing `check` saw (its `Err`).
pub fn wait_until<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(v) => return v,
            Err(last) => assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what}: {last}"
            ),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
