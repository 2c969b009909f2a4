//! `GET /v1/apps/{app}/events?after=CURSOR`: an application's task ends past `CURSOR`
//! (from the start without one), then each new one as it is stored, until the
//! application has finished (see `service::events`). Same checks as every user route:
//! another user's application is 404; a user holds a bounded number of streams open
//! (429 past it). The stream ends early when its token is revoked.

use super::auth::bearer;
use super::error::ApiError;
use super::event_format::EventFormat;
use super::extract::{Caller, Path, Query};
use crate::service::{Manager, ServiceError, KEEPALIVE};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::StreamExt;
use hetpilot_protocol::events::AppEvent;
use hetpilot_protocol::protocol::ErrorBody;
use hetpilot_protocol::AppId;
use serde::Deserialize;
use std::convert::Infallible;
use std::sync::Arc;

/// The largest cursor there can be (cursors are stored as SQLite integers).
const MAX_CURSOR: u64 = i64::MAX as u64;

/// The header a browser's `EventSource` resumes with.
const LAST_EVENT_ID: &str = "last-event-id";

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Resume past this cursor (the `cursor` of the last end received; 0 or none: from
    /// the first end). Without it, an SSE client's `Last-Event-ID` header.
    after: Option<String>,
}

#[utoipa::path(get, path = "/v1/apps/{app}/events", tag = "applications",
    params(("app" = u64, Path, description = "The application"), EventsQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Where an SSE client resumes (when `after` is absent)")),
    responses((status = 200, description = "Each task end past the cursor, then each new one as it is stored, then the \
        application's end: one `AppEvent` a line (`application/x-ndjson`), or server-sent events \
        (`Accept: text/event-stream`)",
        content((AppEvent = "application/x-ndjson"), (AppEvent = "text/event-stream"))), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn events(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(app): Path<AppId>,
    Query(q): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let resumed = q
        .after
        .as_deref()
        .or_else(|| headers.get(LAST_EVENT_ID).and_then(|v| v.to_str().ok()));
    let after = cursor(resumed)?;
    let format = EventFormat::of(&headers);
    let follower = m.follow_events(&who, app, after)?;
    let lines = futures_util::stream::unfold(Some(follower), move |follower| async move {
        let mut follower = follower?;
        match follower.next(KEEPALIVE).await {
            Ok(Some(event)) => {
                // The ends of one page go out in one write.
                let mut chunk = format.encode(&event);
                while let Some(more) = follower.next_read() {
                    chunk.extend_from_slice(&format.encode(&more));
                }
                Some((Ok::<_, Infallible>(Bytes::from(chunk)), Some(follower)))
            }
            Ok(None) => None,
            Err(e) => {
                tracing::info!(%app, error = %e, "task-event stream ended early");
                None
            }
        }
    });
    let token = bearer(&headers).map(str::to_owned);
    let revoked = async move {
        match token {
            Some(token) => m.until_revoked(&token).await,
            None => std::future::pending().await,
        }
    };
    Response::builder()
        .header(CONTENT_TYPE, format.content_type())
        .header(CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(lines.take_until(revoked)))
        .map_err(|e| ApiError::from(ServiceError::Io(format!("building the stream: {e}"))))
}

/// The cursor to resume past: `text` as a whole number from 0 to [`MAX_CURSOR`].
fn cursor(text: Option<&str>) -> Result<u64, ServiceError> {
    let Some(text) = text else { return Ok(0) };
    text.parse::<u64>()
        .ok()
        .filter(|c| *c <= MAX_CURSOR)
        .ok_or_else(|| {
            let shown: String = text.chars().take(40).collect();
            ServiceError::BadRequest(format!(
                "field `after`: `{}` is not a cursor: send the `cursor` of the last event \
                 received, a whole number from 0 to {MAX_CURSOR}",
                shown.escape_debug()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_is_a_bounded_whole_number() {
        assert_eq!(cursor(None).unwrap(), 0);
        assert_eq!(cursor(Some("17")).unwrap(), 17);
        assert_eq!(cursor(Some(&MAX_CURSOR.to_string())).unwrap(), MAX_CURSOR);
        for bad in [
            "",
            "-1",
            "x",
            "1.5",
            "9223372036854775808",
            "99999999999999999999999",
        ] {
            let e = cursor(Some(bad)).unwrap_err().to_string();
            assert!(e.starts_with("field `after`"), "{bad}: {e}");
        }
    }
}
