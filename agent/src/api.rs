//! The agent's side of the `/v1` API: typed calls with timeouts; connection failures are
//! reported as retryable so a manager restart never loses an agent's results.

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
}

impl ApiError {
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Refused { status, .. } => Some(*status),
            ApiError::Unreachable { .. } => None,
        }
    }

    /// Worth retrying: unreachable, or a server-side error.
    pub fn is_transient(&self) -> bool {
        self.status().is_none_or(|s| s >= 500)
    }
}

#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    /// A client of the manager at `base` (trusting its certificate as `trust` says).
    pub fn new(base: &str, token: String, trust: &ClientTrust) -> Result<Api, TlsError> {
        let builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(http::POOL_IDLE_TIMEOUT);
        let http = trust
            .apply_for(base, builder)?
            .build()
            .expect("building the HTTP client");
        Ok(Api {
            http,
            base: base.trim_end_matches('/').to_string(),
            token,
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
        http::call(req).await.map_err(|e| match e {
            CallError::Unreachable(e) => ApiError::Unreachable {
                url,
                message: http::with_causes(&e),
            },
            CallError::Refused { status, message } => ApiError::Refused {
                path: path.to_string(),
                status,
                message,
            },
        })
    }
}
