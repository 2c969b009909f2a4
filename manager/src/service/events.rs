//! Following an application's task ends (`GET /v1/apps/{app}/events`): the ends stored
//! past a cursor, a page at a time, then each new one as it is committed, until the
//! application has finished and every end was sent. Ends are read from the store, never
//! from memory, so a cursor a client was given stands across a manager restart.

use super::event_streams::StreamSlot;
use super::users::user;
use super::{Manager, Principal, ServiceError};
use crate::db::Write;
use hetpilot_protocol::events::{AppEvent, TaskEnd};
use hetpilot_protocol::AppId;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// Most ends read from the store at once.
const PAGE: u64 = 1000;

/// How long a stream waits for an end before it sends a keepalive.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// One client's stream of one application's task ends.
pub struct EventFollower {
    manager: Arc<Manager>,
    who: Principal,
    app: AppId,
    /// The cursor of the last end handed out (or the one the client resumed after).
    after: u64,
    /// Ends read but not handed out yet.
    pending: VecDeque<TaskEnd>,
    /// The application's end was handed out: nothing follows.
    ended: bool,
    /// Held while the stream is open.
    _slot: StreamSlot,
}

impl Manager {
    /// A stream of `app`'s task ends past `after`, for `who` (a user who may see it,
    /// holding fewer open streams than `limits.max_event_streams_per_user`).
    pub fn follow_events(
        self: &Arc<Self>,
        who: &Principal,
        app: AppId,
        after: u64,
    ) -> Result<EventFollower, ServiceError> {
        self.visible(who, app)?;
        let (name, _) = user(who)?;
        let slot = self
            .event_streams
            .take(name, self.settings.limits.max_event_streams_per_user)?;
        Ok(EventFollower {
            manager: self.clone(),
            who: who.clone(),
            app,
            after,
            pending: VecDeque::new(),
            ended: false,
            _slot: slot,
        })
    }
}

impl EventFollower {
    /// The next event: an end, the application's end (after which `None`), or a
    /// keepalive once `keepalive` passed without one. An error ends the stream (the
    /// application was forgotten, the store failed).
    pub async fn next(&mut self, keepalive: Duration) -> Result<Option<AppEvent>, ServiceError> {
        loop {
            if let Some(end) = self.next_read() {
                return Ok(Some(end));
            }
            if self.ended {
                return Ok(None);
            }
            let m = &self.manager;
            let progress = m.waiters.progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            let summary = m.visible(&self.who, self.app)?;
            // Ends are counted in memory just before they are committed: wait for every
            // write queued so far, so that the read below sees each end counted.
            m.writer.commit(Write::Changes(Vec::new())).await?;
            let (app, after) = (self.app, self.after);
            let page = m.read(move |r| r.task_ends(app, after, PAGE)).await?;
            if !page.is_empty() {
                self.pending = page.into();
                continue;
            }
            if summary.is_finished() {
                self.ended = true;
                return Ok(Some(AppEvent::AppEnd {
                    app: self.app,
                    cancelled: summary.cancelled,
                    counts: summary.counts,
                }));
            }
            if tokio::time::timeout(keepalive, progress).await.is_err() {
                return Ok(Some(AppEvent::Keepalive { cursor: self.after }));
            }
        }
    }

    /// The next end already read from the store, if any (no waiting: a sender batches
    /// these into one write).
    pub fn next_read(&mut self) -> Option<AppEvent> {
        let end = self.pending.pop_front()?;
        self.after = end.cursor;
        Some(AppEvent::TaskEnd(end))
    }
}
