//! Sending a request to the manager and decoding its answer: the JSON body on success, the
//! `{"error": ..., "code": ...}` body (or the status's reason) when refused. Shared by the agent and the
//! CLI's client so both report refusals the same way.

use hetpilot_protocol::error_code::ErrorCode;
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// How long clients keep an idle connection for reuse: below the servers' header-read
/// timeout (`hetpilot_transport::serve`, 10 s by default), which closes idle kept-alive
/// connections too, so a client does not send on a connection as the server closes it.
pub const POOL_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Debug)]
pub enum CallError {
    /// No usable answer: connection refused, timed out, or an unreadable body.
    Unreachable(reqwest::Error),
    /// An error status, with the manager's message and its code (none from a server that
    /// sent no code or one this build does not know).
    Refused {
        status: u16,
        message: String,
        code: Option<ErrorCode>,
    },
}

/// An error body as read: the code is taken when it is one this build knows, so a newer
/// server's message still reaches the user.
#[derive(Deserialize)]
struct Refusal {
    error: String,
    #[serde(default)]
    code: Option<String>,
}

/// Sends `req` and decodes the answer.
pub async fn call<T: DeserializeOwned>(req: reqwest::RequestBuilder) -> Result<T, CallError> {
    let resp = req.send().await.map_err(CallError::Unreachable)?;
    let status = resp.status();
    if status.is_success() {
        return resp.json().await.map_err(CallError::Unreachable);
    }
    let (message, code) = match resp.json::<Refusal>().await {
        Ok(b) => (b.error, b.code.and_then(|c| c.parse().ok())),
        Err(_) => (
            status.canonical_reason().unwrap_or("error").to_string(),
            None,
        ),
    };
    Err(CallError::Refused {
        status: status.as_u16(),
        message,
        code,
    })
}

/// An error and its causes, `top: cause: cause`: reqwest's own message ("error sending
/// request") leaves out why, e.g. which certificate was refused.
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
