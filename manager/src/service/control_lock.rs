//! The lock around the control plane, the journal file its inputs go to, and the one place
//! a locked section's effects are applied ([`ControlGuard::release`], or its drop): the
//! changes the control plane made (see `control::Effects`) are queued for the store while
//! the lock still orders them, so a change can never land after, and undo, a later one;
//! whom the section's inputs wake is woken, the scheduling round and the staging planner
//! included when what they plan from changed; and what the control plane journaled is
//! written before the lock is released, so the file holds the inputs in the order the
//! control plane took them.

use super::wake::Waiters;
use crate::control::Control;
use crate::db::{Queued, Write, Writer};
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

    /// Applies the section's effects and releases the lock; returns the wait for the
    /// commit of its changes (done at once when there were none). Dropping the wait
    /// still stores them.
    pub(super) fn release(mut self) -> Queued {
        self.apply()
        // The drop that follows finds nothing left to apply.
    }

    /// Applies what the section's inputs did, under the lock: queues their changes for the
    /// store (the queues' changes, then the pilots' records, in the order made), wakes
    /// whom they wake and writes what they journaled.
    fn apply(&mut self) -> Queued {
        let effects = self.guard.take_effects();
        let mut stored = Queued::Nothing;
        if !effects.changes.is_empty() {
            stored = self.writer.queue(Write::Changes(effects.changes));
        }
        for record in effects.pilots {
            // Writes commit in order: the last one's commit says all are.
            stored = self.writer.queue(Write::Pilot {
                record,
                credential: None,
            });
        }
        let wake = effects.wake;
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
        self.write_journal();
        stored
    }

    fn write_journal(&mut self) {
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
        // A section that did not ask for the wait: its changes are stored all the same.
        drop(self.apply());
    }
}
