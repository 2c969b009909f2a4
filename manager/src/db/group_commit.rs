//! The group-commit writer thread: one thread owns the write connection; whatever arrives
//! while it commits one transaction goes into the next, so many small changes share one
//! fsync. What it writes (the [`Write`] vocabulary and its SQL) is in `write_ops`.

use super::task_ends::EndSequences;
use super::write_ops::Write;
use rusqlite::Connection;
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context, Poll};
use thiserror::Error;
use tokio::sync::oneshot;

#[derive(Debug, Clone, Error)]
pub enum StoreError {
    #[error("the database refused a write: {0}")]
    Sqlite(String),
    #[error("the store's writer thread has stopped")]
    Stopped,
}

struct Job {
    write: Write,
    ack: Option<oneshot::Sender<Result<(), StoreError>>>,
}

/// Handle to the writer thread; writes are applied in the order they are sent.
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Job>,
}

/// Most writes in one transaction.
const MAX_BATCH: usize = 8192;

impl Writer {
    pub fn spawn(conn: Connection) -> Writer {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || run(conn, rx))
            .expect("spawning the store writer thread");
        Writer { tx }
    }

    /// Persists `write` and waits until it is committed.
    pub async fn commit(&self, write: Write) -> Result<(), StoreError> {
        self.queue(write).await
    }

    /// Queues `write` now, behind everything sent before; the returned [`Queued`]
    /// resolves when it is committed. A caller that must order its writes as it orders its
    /// changes queues them under the lock that orders the changes and awaits outside it.
    pub fn queue(&self, write: Write) -> Queued {
        let (ack, done) = oneshot::channel();
        match self.tx.send(Job {
            write,
            ack: Some(ack),
        }) {
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

fn run(mut conn: Connection, rx: mpsc::Receiver<Job>) {
    let mut ends = EndSequences::default();
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let result = commit_batch(&mut conn, &batch, &mut ends)
            .map_err(|e| StoreError::Sqlite(e.to_string()));
        if let Err(e) = &result {
            tracing::error!(error = %e, writes = batch.len(), "a batch of writes failed and was rolled back");
        }
        for job in batch {
            if let Some(ack) = job.ack {
                let _ = ack.send(result.clone());
            }
        }
    }
}

/// Commits `batch` in one transaction. End sequences given in a batch rolled back are not
/// given again: the stream's cursors skip them.
fn commit_batch(
    conn: &mut Connection,
    batch: &[Job],
    ends: &mut EndSequences,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for job in batch {
        job.write.apply(&tx, ends)?;
    }
    tx.commit()
}
