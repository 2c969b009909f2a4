//! The agent's side of the `/v1` API: typed calls with timeouts; connection failures are
//! reported as retryable so a manager restart never loses an agent's results, until the
//! manager has been silent for longer than the agent waits (`Contact`).

use crate::contact::Contact;
use hetpilot_transport::http::{self, CallError};
use hetpilot_transport::tls::{ClientTrust, TlsError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ApiError {
    /// The manager could not be reached or did not answer: try again later.
    #[error("cannot reach the manager at {url}: {message}")]
    Unreachable { url: String, message: String },
    /// The manager answered with an error status.
    #[error("the manager refused {path} ({status}): {message}")]
    Refused {
        path: String,
        status: u16,
        message: String,
    },
    /// Nothing has answered for longer than the agent waits: stop retrying.
    #[error("the manager at {url} has not answered for {}s, longer than this agent waits (--give-up-secs; before registering, --register-timeout-secs); last error: {message}", silent.as_secs())]
    Silent {
        url: String,
        silent: Duration,
        message: String,
    },
}

impl ApiError {
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Refused { status, .. } => Some(*status),
            ApiError::Unreachable { .. } | ApiError::Silent { .. } => None,
        }
    }

    /// Worth retrying: unreachable, or a server-side error.
    pub fn is_transient(&self) -> bool {
        match self {
            ApiError::Unreachable { .. } => true,
            ApiError::Refused { status, .. } => *status >= 500,
            ApiError::Silent { .. } => false,
        }
    }
}

#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
    contact: Contact,
}

/// A client of the manager at `base`, trusting its certificate as `trust` says; over plain
/// `http://`, speaking HTTP/2 from the first byte when `http2_prior_knowledge` (under TLS,
/// ALPN agrees on HTTP/2 by itself where the manager serves it).
fn client(
    base: &str,
    trust: &ClientTrust,
    http2_prior_knowledge: bool,
) -> Result<reqwest::Client, TlsError> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .pool_idle_timeout(http::POOL_IDLE_TIMEOUT);
    if http2_prior_knowledge && base.starts_with("http://") {
        builder = builder.http2_prior_knowledge();
    }
    Ok(trust
        .apply_for(base, builder)?
        .build()
        .expect("building the HTTP client"))
}

impl Api {
    /// A client of the manager at `base` (trusting its certificate as `trust` says), whose
    /// calls fail for good once the manager has been silent for `give_up`.
    pub fn new(
        base: &str,
        token: String,
        trust: &ClientTrust,
        give_up: Duration,
    ) -> Result<Api, TlsError> {
        Ok(Api {
            http: client(base, trust, false)?,
            base: base.trim_end_matches('/').to_string(),
            token,
            contact: Contact::new(give_up),
        })
    }

    /// This client, making its calls on one HTTP/2 connection (a manager that said it
    /// serves HTTP/2 over plain TCP: `RegisterResponse::http2`).
    pub fn over_http2(self, trust: &ClientTrust) -> Result<Api, TlsError> {
        Ok(Api {
            http: client(&self.base, trust, true)?,
            ..self
        })
    }

    pub fn with_token(&self, token: String) -> Api {
        Api {
            token,
            ..self.clone()
        }
    }

    /// POSTs `body` to `path` and decodes the answer; `timeout` bounds the whole call.
    pub async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
        timeout: Duration,
    ) -> Result<T, ApiError> {
        let url = format!("{}{}", self.base, path);
        let req = self
            .http
            .post(&url)
            .bearer_auth(&self.token)
            .timeout(timeout)
            .json(body);
        let answer = http::call(req).await;
        if !matches!(answer, Err(CallError::Unreachable(_))) {
            self.contact.heard();
        }
        answer.map_err(|e| match e {
            CallError::Unreachable(e) => {
                let message = http::with_causes(&e);
                match self.contact.gave_up() {
                    Some(silent) => ApiError::Silent {
                        url,
                        silent,
                        message,
                    },
                    None => ApiError::Unreachable { url, message },
                }
            }
            CallError::Refused {
                status, message, ..
            } => ApiError::Refused {
                path: path.to_string(),
                status,
                message,
            },
        })
    }

    /// PUTs `len` bytes of `file` to `path` (a task output the manager asked for),
    /// saying that `skipped` bytes before them were left out.
    pub async fn put_output(
        &self,
        path: &str,
        file: tokio::fs::File,
        len: u64,
        skipped: u64,
    ) -> Result<(), String> {
        let url = format!("{}{}", self.base, path);
        let resp = self
            .http
            .put(&url)
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(600))
            .header(reqwest::header::CONTENT_LENGTH, len)
            .header(hetpilot_protocol::task_output::SKIPPED_HEADER, skipped)
            .body(reqwest::Body::from(file))
            .send()
            .await
            .map_err(|e| format!("cannot reach {url}: {}", http::with_causes(&e)))?;
        if !resp.status().is_success() {
            let status = resp.status();
            let body = resp.text().await.unwrap_or_default();
            return Err(format!(
                "{url} refused the output ({status}): {}",
                body.trim()
            ));
        }
        Ok(())
    }
}
