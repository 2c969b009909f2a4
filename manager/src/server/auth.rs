//! Authentication before anything else: a layer that resolves the bearer token from the
//! request's headers and answers 401 before a single byte of the body is read. The caller
//! it found travels to the handlers in the request's extensions (see `extract::Caller`).

use super::error::ApiError;
use crate::service::Manager;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The bearer token of a request, if it has one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// Passes on requests with a valid token, with their `Principal` attached; 401 otherwise.
pub async fn authenticate(
    State(manager): State<Arc<Manager>>,
    mut req: Request,
    next: Next,
) -> Response {
    match manager.authenticate(bearer(req.headers())) {
        Ok(who) => {
            req.extensions_mut().insert(who);
            next.run(req).await
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}
