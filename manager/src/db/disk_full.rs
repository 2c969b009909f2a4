//! Whether the data directory is full: SQLite answers SQLITE_FULL when the disk (or the
//! user's quota) under the database has no room for a commit. The writer thread notes each
//! such refusal and each commit that went through; the state is shown on `/metrics`, and
//! entering it is logged once (again at most every [`WARN_EVERY`] while it lasts), not
//! once a request.

use super::group_commit::StoreError;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Least time between two warnings while the data directory stays full.
const WARN_EVERY: Duration = Duration::from_secs(300);

/// Whether SQLite refused `e` for want of space.
pub(super) fn is_disk_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

/// The full-or-not state of one data directory.
#[derive(Debug)]
pub(super) struct DiskFull {
    dir: PathBuf,
    full: AtomicBool,
    last_warned: Mutex<Option<Instant>>,
}

impl DiskFull {
    pub(super) fn new(dir: PathBuf) -> DiskFull {
        DiskFull {
            dir,
            full: AtomicBool::new(false),
            last_warned: Mutex::new(None),
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }

    /// The refusal a caller gets while there is no room.
    pub(super) fn error(&self) -> StoreError {
        StoreError::Full {
            dir: self.dir.clone(),
        }
    }

    /// A commit was refused for want of space; `waiting` changes wait to be stored.
    pub(super) fn refused(&self, waiting: usize) {
        self.full.store(true, Ordering::Relaxed);
        let mut last = self.last_warned.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < WARN_EVERY) {
            return;
        }
        *last = Some(Instant::now());
        tracing::warn!(
            data_dir = %self.dir.display(),
            waiting_changes = waiting,
            "the data directory is full (its disk or its quota): new work is refused with \
             HTTP 507 until space is freed there; what the manager acknowledged is kept, and \
             it resumes by itself once a commit goes through"
        );
    }

    /// Everything sent so far is committed.
    pub(super) fn committed(&self) {
        if self.full.swap(false, Ordering::Relaxed) {
            tracing::info!(data_dir = %self.dir.display(), "the data directory has room again: new work is accepted");
        }
    }
}
