//! The group-commit writer thread: one thread owns the write connection; whatever arrives
//! while it commits one transaction goes into the next, so many small changes share one
//! fsync. What it writes (the [`Write`] vocabulary and its SQL) is in `write_ops`.
//!
//! A write is either *fresh* ([`Writer::commit`]: its caller changes the manager's memory
//! only once it is committed) or the *record* of a change the memory has already made
//! ([`Writer::queue`]). When the data directory is full (see `disk_full`), a fresh write is
//! refused and forgotten, while a record is kept, in order, and retried until it commits:
//! its caller hears that it is not committed yet (so an agent keeps and resends its
//! result), the store never misses a change the memory made, and nothing commits ahead of
//! a record still waiting.

use super::disk_full::{is_disk_full, DiskFull};
use super::task_ends::EndSequences;
use super::write_ops::Write;
use rusqlite::Connection;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll};
use std::time::Duration;
use thiserror::Error;
use tokio::sync::oneshot;

#[derive(Debug, Clone, Error)]
pub enum StoreError {
    #[error("the database refused a write: {0}")]
    Sqlite(String),
    #[error(
        "the data directory {} is full (its disk or its quota): the manager takes no new work \
         until space is freed there; free some space (or raise the quota) and it resumes by \
         itself, keeping everything it acknowledged", dir.display()
    )]
    Full { dir: PathBuf },
    #[error("the store's writer thread has stopped")]
    Stopped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Memory changes once it is committed: refused when there is no room.
    Fresh,
    /// Memory has changed already: kept and retried when there is no room.
    Record,
}

struct Job {
    write: Write,
    kind: Kind,
    ack: oneshot::Sender<Result<(), StoreError>>,
}

// The small variant exists in tests only: boxing the job would cost every write.
#[cfg_attr(test, allow(clippy::large_enum_variant))]
enum Message {
    Job(Job),
    /// Caps the database's size in pages (SQLite's `max_page_count`), so tests fill it.
    #[cfg(test)]
    PageLimit(u32),
}

/// Handle to the writer thread; writes are applied in the order they are sent.
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Message>,
    full: Arc<DiskFull>,
}

/// Most writes in one transaction.
const MAX_BATCH: usize = 8192;

/// How often records refused for want of space are retried while nothing else arrives.
const RETRY_EVERY: Duration = Duration::from_secs(1);

impl Writer {
    pub fn spawn(conn: Connection) -> Writer {
        let dir = conn
            .path()
            .and_then(|p| Path::new(p).parent())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let full = Arc::new(DiskFull::new(dir));
        let (tx, rx) = mpsc::channel::<Message>();
        let thread_full = full.clone();
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || run(conn, rx, &thread_full))
            .expect("spawning the store writer thread");
        Writer { tx, full }
    }

    /// Persists `write`, a fresh one (memory changes once it is committed), and waits
    /// until it is committed; refused with [`StoreError::Full`] while there is no room.
    pub async fn commit(&self, write: Write) -> Result<(), StoreError> {
        self.send(write, Kind::Fresh).await
    }

    /// Queues `write`, the record of a change memory has made, now, behind everything sent
    /// before; the returned [`Queued`] resolves when it is committed (or with
    /// [`StoreError::Full`] while there is no room: it stays queued and commits once there
    /// is). A caller that must order its writes as it orders its changes queues them under
    /// the lock that orders the changes and awaits outside it.
    pub fn queue(&self, write: Write) -> Queued {
        self.send(write, Kind::Record)
    }

    /// Whether the last commit was refused for want of space in the data directory.
    pub fn data_dir_full(&self) -> bool {
        self.full.is_full()
    }

    /// Caps the database at `pages` pages (at least its size now), after every write sent
    /// before: the store is "full" without filling a disk.
    #[cfg(test)]
    pub fn limit_pages(&self, pages: u32) {
        self.tx
            .send(Message::PageLimit(pages))
            .expect("the writer thread runs");
    }

    fn send(&self, write: Write, kind: Kind) -> Queued {
        let (ack, done) = oneshot::channel();
        match self.tx.send(Message::Job(Job { write, kind, ack })) {
            Ok(()) => Queued::Sent(done),
            Err(_) => {
                tracing::error!("store writer stopped; a change was not persisted");
                Queued::Refused(StoreError::Stopped)
            }
        }
    }
}

/// A queued write: await it for its commit, or drop it (the write stands).
#[must_use = "await it for the commit, or drop it explicitly"]
pub enum Queued {
    /// Nothing to write: resolves at once.
    Nothing,
    /// With the writer; resolves with the commit's outcome.
    Sent(oneshot::Receiver<Result<(), StoreError>>),
    /// The writer could not take it.
    Refused(StoreError),
}

impl Future for Queued {
    type Output = Result<(), StoreError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Queued::Nothing => Poll::Ready(Ok(())),
            Queued::Refused(e) => Poll::Ready(Err(e.clone())),
            Queued::Sent(done) => Pin::new(done)
                .poll(cx)
                .map(|acked| acked.unwrap_or(Err(StoreError::Stopped))),
        }
    }
}

fn run(mut conn: Connection, rx: mpsc::Receiver<Message>, full: &DiskFull) {
    // Records refused for want of space, oldest first.
    let mut backlog: Vec<Write> = Vec::new();
    let mut ends = EndSequences::default();
    loop {
        let first = if backlog.is_empty() {
            match rx.recv() {
                Ok(message) => Some(message),
                Err(mpsc::RecvError) => break,
            }
        } else {
            match rx.recv_timeout(RETRY_EVERY) {
                Ok(message) => Some(message),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        };
        let mut jobs = Vec::new();
        let mut next = first;
        while let Some(message) = next {
            match message {
                Message::Job(job) => jobs.push(job),
                #[cfg(test)]
                Message::PageLimit(pages) => {
                    commit_round(
                        &mut conn,
                        &mut backlog,
                        std::mem::take(&mut jobs),
                        full,
                        &mut ends,
                    );
                    conn.pragma_update(None, "max_page_count", pages)
                        .expect("setting max_page_count");
                }
            }
            next = if jobs.len() < MAX_BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        commit_round(&mut conn, &mut backlog, jobs, full, &mut ends);
    }
    if !backlog.is_empty() {
        commit_round(&mut conn, &mut backlog, Vec::new(), full, &mut ends);
        if !backlog.is_empty() {
            tracing::error!(
                writes = backlog.len(),
                "the manager stops with changes the full data directory never took"
            );
        }
    }
}

/// Commits the backlog and `jobs` in one transaction. When that fails: the backlog and the
/// records alone, then each fresh write alone, so that a fresh write cannot sink records
/// and one fresh write cannot sink another. End sequences given in a transaction rolled
/// back are not given again: the event stream's cursors skip them.
fn commit_round(
    conn: &mut Connection,
    backlog: &mut Vec<Write>,
    jobs: Vec<Job>,
    full: &DiskFull,
    ends: &mut EndSequences,
) {
    if jobs.is_empty() && backlog.is_empty() {
        return;
    }
    let Err(error) = commit_writes(
        conn,
        backlog.iter().chain(jobs.iter().map(|j| &j.write)),
        ends,
    ) else {
        backlog.clear();
        full.committed();
        for job in jobs {
            let _ = job.ack.send(Ok(()));
        }
        return;
    };
    let (records, fresh): (Vec<Job>, Vec<Job>) =
        jobs.into_iter().partition(|j| j.kind == Kind::Record);
    let records_result = if fresh.is_empty() {
        Err(error)
    } else if backlog.is_empty() && records.is_empty() {
        Ok(())
    } else {
        commit_writes(
            conn,
            backlog.iter().chain(records.iter().map(|j| &j.write)),
            ends,
        )
    };
    let mut out_of_room = false;
    match records_result {
        Ok(()) => {
            backlog.clear();
            for job in records {
                let _ = job.ack.send(Ok(()));
            }
        }
        Err(e) if is_disk_full(&e) => {
            out_of_room = true;
            // Noted before anyone hears of it.
            full.refused(backlog.len() + records.len());
            for job in records {
                let _ = job.ack.send(Err(full.error()));
                backlog.push(job.write);
            }
        }
        Err(e) => {
            tracing::error!(error = %e, writes = backlog.len() + records.len(), "a batch of changes failed and was rolled back");
            backlog.clear();
            for job in records {
                let _ = job.ack.send(Err(StoreError::Sqlite(e.to_string())));
            }
        }
    }
    for job in fresh {
        // Nothing commits ahead of a record still waiting.
        let answer = if !backlog.is_empty() {
            Err(full.error())
        } else {
            commit_writes(conn, std::iter::once(&job.write), ends).map_err(|e| {
                if is_disk_full(&e) {
                    out_of_room = true;
                    full.refused(0);
                    full.error()
                } else {
                    tracing::error!(error = %e, "a write failed and was rolled back");
                    StoreError::Sqlite(e.to_string())
                }
            })
        };
        let _ = job.ack.send(answer);
    }
    if !out_of_room {
        full.committed();
    }
}

fn commit_writes<'a>(
    conn: &mut Connection,
    writes: impl Iterator<Item = &'a Write>,
    ends: &mut EndSequences,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for write in writes {
        write.apply(&tx, ends)?;
    }
    tx.commit()
}
