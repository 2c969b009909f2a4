//! Long polls end with their token. A request authenticated once and then parked for up
//! to a minute (`GET /v1/apps/APP?wait_ms=N`, an agent's pull) would otherwise keep
//! answering with fresh data after its token was re-issued, rotated or revoked, or after
//! its agent left or was lost. This layer, inside authentication, races the request
//! against its token's revocation and answers 401 as soon as the token stops being valid;
//! the waits it cuts short read or lease nothing that a revoked caller would keep.

use super::auth::bearer;
use super::error::ApiError;
use crate::service::Manager;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hetpilot_protocol::error_code::ErrorCode;
use std::sync::Arc;

/// Answers the request, or 401 once its token is revoked, whichever comes first.
pub async fn end_on_revocation(
    State(manager): State<Arc<Manager>>,
    req: Request,
    next: Next,
) -> Response {
    // Authentication ran first, so the token is there; without one, nothing to revoke.
    let Some(token) = bearer(req.headers()).map(str::to_owned) else {
        return next.run(req).await;
    };
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    tracing::debug!(%route, "long poll authenticated; it ends early if its token is revoked");
    tokio::select! {
        // A revoked token wins over an answer ready at the same moment.
        biased;
        () = manager.until_revoked(&token) => {
            tracing::info!(%route, "long poll ended: its token was revoked");
            ApiError::new(
                ErrorCode::Unauthorized,
                "this token was revoked while the request waited (re-issued, rotated, or \
                 its agent left): use the current token",
            )
            .into_response()
        }
        answer = next.run(req) => answer,
    }
}
