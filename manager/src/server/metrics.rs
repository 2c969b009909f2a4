//! `GET /metrics` (Prometheus) and the layer that counts every HTTP request by route
//! pattern and status. The exposition is readable with the admin token or, when
//! `[metrics] token_file` names one, with that read-only token, which opens nothing else.

use super::auth::bearer;
use super::error::ApiError;
use super::metrics_state;
use crate::metrics::CONTENT_TYPE;
use crate::service::{auth::hash, Manager, Principal, ServiceError};
use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE as CONTENT_TYPE_HEADER;
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Instant;

/// Who may read `/metrics`: the manager, and the SHA-256 of the metrics token if any.
#[derive(Clone)]
pub struct MetricsAccess {
    pub manager: Arc<Manager>,
    pub token_hash: Option<String>,
}

impl MetricsAccess {
    /// Reads the metrics token named by the configuration, if any. An unreadable file
    /// is logged and leaves `/metrics` to the admin token.
    pub fn new(manager: Arc<Manager>) -> Self {
        let token_hash = match manager.settings.metrics.read_token() {
            Ok(t) => t.map(|t| hash(&t)),
            Err(e) => {
                tracing::error!(error = %e, "/metrics is readable with the admin token only");
                None
            }
        };
        MetricsAccess {
            manager,
            token_hash,
        }
    }

    fn allows(&self, headers: &HeaderMap) -> Result<(), ServiceError> {
        let token = bearer(headers).ok_or(ServiceError::Unauthorized)?;
        if let Some(h) = &self.token_hash {
            if *h == hash(token) {
                return Ok(());
            }
        }
        match self.manager.authenticate(Some(token))? {
            Principal::User { admin: true, .. } => Ok(()),
            _ => Err(ServiceError::Forbidden(
                "/metrics needs the admin token or the metrics token".into(),
            )),
        }
    }
}

pub async fn exposition(State(access): State<MetricsAccess>, headers: HeaderMap) -> Response {
    if let Err(e) = access.allows(&headers) {
        return ApiError::from(e).into_response();
    }
    let manager = access.manager.clone();
    // The views take the control lock briefly; the encoding runs off the async runtime.
    match tokio::task::spawn_blocking(move || metrics_state::exposition(&manager)).await {
        Ok(Ok(text)) => ([(CONTENT_TYPE_HEADER, CONTENT_TYPE)], text).into_response(),
        Ok(Err(e)) => ApiError::from(e).into_response(),
        Err(e) => ApiError::from(ServiceError::from(e)).into_response(),
    }
}

/// Counts the request under its route pattern (never its path: no ids in labels).
pub async fn track(State(manager): State<Arc<Manager>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_string();
    let method = match *req.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        _ => "other",
    };
    let response = next.run(req).await;
    manager.metrics.http(
        &route,
        method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}
