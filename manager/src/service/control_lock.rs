//! The lock around the control plane, the journal file its inputs go to, and the order its
//! changes reach the store. What the control plane journaled under the lock is written
//! before the lock is released, so the file holds the inputs in the order the control plane
//! took them; the changes it returns are queued for the store under the lock too
//! ([`ControlGuard::persist`]), so a change can never land after, and undo, a later one.
//! Whom the section's inputs wake (see `wake`) is woken as the lock is released, the
//! scheduling round and the staging planner included when what they plan from changed.

use super::wake::Waiters;
use crate::control::Control;
use crate::db::{Queued, Write, Writer};
use crate::queue::Change;
use std::fs::File;
use std::io::Write as _;
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::Notify;

/// The journal file (one JSON object a line). Only a manager asked to journal has one:
/// each write is a system call under the control lock.
pub(super) struct JournalFile(Mutex<File>);

impl JournalFile {
    pub(super) fn create(path: &Path) -> std::io::Result<JournalFile> {
        use std::os::unix::fs::OpenOptionsExt;
        // The journal holds users' commands and environments: owner only.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?;
        Ok(JournalFile(Mutex::new(file)))
    }
}

/// What plans from the control plane's state, woken when it changed (`Wake::replan`).
pub(super) struct Planners<'a> {
    /// The scheduling round's loop.
    pub(super) round: &'a Notify,
    /// The background Het-HPS planner.
    pub(super) staging: &'a Notify,
}

pub(super) struct ControlGuard<'a> {
    guard: MutexGuard<'a, Control>,
    journal: Option<&'a JournalFile>,
    writer: &'a Writer,
    waiters: &'a Waiters,
    planners: Planners<'a>,
}

impl<'a> ControlGuard<'a> {
    pub(super) fn new(
        guard: MutexGuard<'a, Control>,
        journal: Option<&'a JournalFile>,
        writer: &'a Writer,
        waiters: &'a Waiters,
        planners: Planners<'a>,
    ) -> Self {
        ControlGuard {
            guard,
            journal,
            writer,
            waiters,
            planners,
        }
    }

    /// Queues `changes` for the store now, while the lock orders them after every change
    /// made before; returns the wait for their commit (already done when there are none).
    /// Dropping the wait still stores them.
    pub(super) fn persist(&self, changes: Vec<Change>) -> Queued {
        if changes.is_empty() {
            Queued::Nothing
        } else {
            self.writer.queue(Write::Changes(changes))
        }
    }
}

impl ControlGuard<'_> {
    /// Queues a pilot's changed record (with its credential when it is new) for the store
    /// now, in order after every change made before (see [`Self::persist`]).
    pub(super) fn persist_pilot(
        &self,
        record: hetpilot_protocol::pilots::PilotRecord,
        credential: Option<crate::db::PilotCredential>,
    ) -> Queued {
        self.writer.queue(Write::Pilot { record, credential })
    }
}

impl Deref for ControlGuard<'_> {
    type Target = Control;
    fn deref(&self) -> &Control {
        &self.guard
    }
}

impl DerefMut for ControlGuard<'_> {
    fn deref_mut(&mut self) -> &mut Control {
        &mut self.guard
    }
}

impl Drop for ControlGuard<'_> {
    fn drop(&mut self) {
        let wake = self.guard.take_wake();
        if wake.replan {
            self.planners.round.notify_one();
            self.planners.staging.notify_one();
        }
        if !wake.is_empty() {
            // What the section changed was queued for the store above, in order before
            // anything the woken make: a lease of a released child commits after the
            // parent's result, and a client's answer waits for every queued write.
            self.waiters.deliver(wake, super::now_ms());
        }
        let Some(journal) = self.journal else {
            return;
        };
        let entries = self.guard.take_journal();
        if entries.is_empty() {
            return;
        }
        let mut lines = String::new();
        for e in &entries {
            match serde_json::to_string(e) {
                Ok(line) => {
                    lines.push_str(&line);
                    lines.push('\n');
                }
                Err(err) => tracing::error!(error = %err, "a journal entry cannot be written"),
            }
        }
        let mut file = journal.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(err) = file.write_all(lines.as_bytes()) {
            tracing::error!(error = %err, "cannot write the journal; the replay will miss inputs");
        }
    }
}
