//! The client's side of the task-event stream (`GET /v1/apps/{app}/events`): events read
//! a line at a time, and a dropped connection resumed past the last cursor received, so
//! the caller sees every task end once.

use crate::client::{Client, ClientError};
use hetpilot_protocol::events::AppEvent;
use hetpilot_protocol::AppId;
use std::time::Duration;

/// Resumptions in a row, with no event between them, before the stream gives up.
const MAX_RESUMES: u32 = 6;

/// The longest line taken from the manager (an end is well under a KiB).
const MAX_LINE: usize = 1 << 20;

/// One application's events, resumed across dropped connections.
pub struct EventStream<'a> {
    client: &'a Client,
    app: AppId,
    after: u64,
    response: Option<reqwest::Response>,
    buffer: Vec<u8>,
    ended: bool,
    resumes: u32,
}

impl<'a> EventStream<'a> {
    /// `app`'s events past `after` (0: from its first end).
    pub fn new(client: &'a Client, app: AppId, after: u64) -> EventStream<'a> {
        EventStream {
            client,
            app,
            after,
            response: None,
            buffer: Vec::new(),
            ended: false,
            resumes: 0,
        }
    }

    /// The cursor of the last end received (what a later stream resumes past).
    pub fn cursor(&self) -> u64 {
        self.after
    }

    /// The next event; `None` after the application's end. A refusal (the application
    /// is not yours, too many streams) is an error at once; a dropped connection is
    /// resumed, up to [`MAX_RESUMES`] times in a row.
    pub async fn next(&mut self) -> Result<Option<AppEvent>, ClientError> {
        loop {
            if self.ended {
                return Ok(None);
            }
            if let Some(event) = self.next_buffered()? {
                return Ok(Some(event));
            }
            let response = match &mut self.response {
                Some(response) => response,
                None => match self.client.events(self.app, self.after).await {
                    Ok(response) => self.response.insert(response),
                    Err(e @ ClientError::Unreachable { .. }) => {
                        self.resume_later(e).await?;
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            match response.chunk().await {
                Ok(Some(bytes)) => {
                    self.buffer.extend_from_slice(&bytes);
                    if self.buffer.len() > MAX_LINE {
                        return Err(bad_line("a line longer than 1 MiB"));
                    }
                }
                Ok(None) => {
                    let e = ClientError::Unreachable {
                        url: self.client.base().to_string(),
                        message: "the event stream closed before the application's end".into(),
                    };
                    self.resume_later(e).await?;
                }
                Err(e) => {
                    let e = ClientError::Unreachable {
                        url: self.client.base().to_string(),
                        message: format!("the event stream broke: {e}"),
                    };
                    self.resume_later(e).await?;
                }
            }
        }
    }

    /// The next whole line received, as an event.
    fn next_buffered(&mut self) -> Result<Option<AppEvent>, ClientError> {
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let event: AppEvent = serde_json::from_slice(&line)
                .map_err(|e| bad_line(&format!("a line that is not an event ({e})")))?;
            if let Some(cursor) = event.cursor() {
                self.after = cursor;
            }
            self.ended = matches!(event, AppEvent::AppEnd { .. });
            self.resumes = 0;
            return Ok(Some(event));
        }
        Ok(None)
    }

    /// Drops the connection (and any partial line: it is sent again) and waits before
    /// the next; `e` once too many resumptions failed in a row.
    async fn resume_later(&mut self, e: ClientError) -> Result<(), ClientError> {
        self.response = None;
        self.buffer.clear();
        self.resumes += 1;
        if self.resumes > MAX_RESUMES {
            return Err(e);
        }
        tracing::info!(app = %self.app, after = self.after, error = %e, "resuming the event stream");
        tokio::time::sleep(Duration::from_millis(250 << self.resumes.min(5))).await;
        Ok(())
    }
}

fn bad_line(what: &str) -> ClientError {
    ClientError::Refused {
        status: 502,
        message: format!("the manager's event stream sent {what}"),
        code: None,
    }
}
