//! The live manager's waiters: agents long-polling for work and clients long-polling an
//! application's progress. The control plane decides whom its inputs wake
//! ([`hetpilot_core::control::Wake`]); every locked section hands that decision here as
//! it ends (`control_lock`), so a pull sleeps out its long poll only when nothing it could
//! lease appeared.

use crate::control::Wake;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

#[derive(Default)]
pub(super) struct Waiters {
    /// Woken whenever agents idle in a long poll may lease something.
    pub(super) work: Arc<Notify>,
    /// Woken whenever tasks end or applications go, for clients waiting on one.
    pub(super) progress: Notify,
}

impl Waiters {
    /// Wakes whom `wake` names; a deadline wakes the idle agents again then (from a timer
    /// on the async runtime: none outside one, as in a bare unit test).
    pub(super) fn deliver(&self, wake: Wake, now_ms: u64) {
        if wake.work {
            self.work.notify_waiters();
        }
        if wake.progress {
            self.progress.notify_waiters();
        }
        let Some(at) = wake.work_at_ms else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let work = self.work.clone();
        let delay = Duration::from_millis(at.saturating_sub(now_ms));
        runtime.spawn(async move {
            tokio::time::sleep(delay).await;
            work.notify_waiters();
        });
    }
}
