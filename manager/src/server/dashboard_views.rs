//! Views the dashboard reads: `GET /v1/whoami`, `/v1/affinity` (the online affinity
//! tables, also `hetpilot affinity --live`), `/v1/staging` (bytes moved) and `/v1/history`
//! (fairness and progress over the last samples).

use super::error::ApiError;
use super::extract::{Caller, Json};
use crate::service::Manager;
use axum::extract::State;
use hetpilot_protocol::affinity_view::AffinityView;
use hetpilot_protocol::dashboard::{History, StagingBytes, WhoAmI};
use hetpilot_protocol::protocol::ErrorBody;
use std::sync::Arc;

#[utoipa::path(get, path = "/v1/whoami", tag = "dashboard",
    responses((status = 200, description = "Who the token is", body = WhoAmI), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn whoami(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<WhoAmI>, ApiError> {
    Ok(Json(m.whoami(&who)?))
}

#[utoipa::path(get, path = "/v1/affinity", tag = "dashboard",
    responses((status = 200, description = "Platform and co-runner affinities, measured online", body = AffinityView), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn affinity(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<AffinityView>, ApiError> {
    Ok(Json(m.affinity(&who).await?))
}

#[utoipa::path(get, path = "/v1/staging", tag = "dashboard",
    responses((status = 200, description = "Bytes staged per platform", body = Vec<StagingBytes>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn staging(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<Vec<StagingBytes>>, ApiError> {
    Ok(Json(m.staging_bytes(&who)?))
}

#[utoipa::path(get, path = "/v1/history", tag = "dashboard",
    responses((status = 200, description = "What the dashboard charts over time", body = History), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn history(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<History>, ApiError> {
    Ok(Json(m.history(&who)?))
}
