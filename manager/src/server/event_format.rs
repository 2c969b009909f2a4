//! How the task-event stream is written on the wire: newline-delimited JSON (one
//! [`AppEvent`] a line, the default) or server-sent events (`Accept: text/event-stream`:
//! each end's cursor as its `id`, so a browser's `EventSource` resumes by itself).

use axum::http::header::ACCEPT;
use axum::http::HeaderMap;
use hetpilot_protocol::events::AppEvent;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFormat {
    NdJson,
    ServerSent,
}

impl EventFormat {
    /// Server-sent events when the request accepts them, else newline-delimited JSON.
    pub fn of(headers: &HeaderMap) -> EventFormat {
        let sse = headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|media| media.split(';').next().map(str::trim) == Some("text/event-stream"));
        if sse {
            EventFormat::ServerSent
        } else {
            EventFormat::NdJson
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            EventFormat::NdJson => "application/x-ndjson",
            EventFormat::ServerSent => "text/event-stream",
        }
    }

    /// `event` as the bytes to send.
    pub fn encode(self, event: &AppEvent) -> Vec<u8> {
        let json = serde_json::to_string(event).expect("events serialize");
        let text = match (self, event) {
            (EventFormat::NdJson, _) => format!("{json}\n"),
            (EventFormat::ServerSent, AppEvent::Keepalive { .. }) => ": keepalive\n\n".into(),
            (EventFormat::ServerSent, AppEvent::TaskEnd(end)) => {
                format!("id: {}\nevent: task_end\ndata: {json}\n\n", end.cursor)
            }
            (EventFormat::ServerSent, AppEvent::AppEnd { .. }) => {
                format!("event: app_end\ndata: {json}\n\n")
            }
        };
        text.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn server_sent_events_only_when_accepted() {
        let mut headers = HeaderMap::new();
        assert_eq!(EventFormat::of(&headers), EventFormat::NdJson);
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream;q=0.9"),
        );
        assert_eq!(EventFormat::of(&headers), EventFormat::ServerSent);
        let line = EventFormat::NdJson.encode(&AppEvent::Keepalive { cursor: 4 });
        assert_eq!(&line[..], b"{\"type\":\"keepalive\",\"cursor\":4}\n");
        let comment = EventFormat::ServerSent.encode(&AppEvent::Keepalive { cursor: 4 });
        assert_eq!(&comment[..], b": keepalive\n\n");
    }
}
