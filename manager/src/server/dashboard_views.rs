//! Views the dashboard reads: `GET /v1/whoami`, `/v1/affinity` (the online affinity
//! tables, also `hetpilot affinity --live`), `/v1/staging` (bytes moved) and `/v1/history`
//! (fairness and progress over the last samples).

use super::error::ApiError;
use super::extract::{Caller, Json};
use crate::service::Manager;
use axum::extract::State;
use hetpilot_protocol::affinity_view::AffinityView;
use hetpilot_protocol::dashboard::{History, StagingBytes, WhoAmI};
use std::sync::Arc;

pub async fn whoami(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<WhoAmI>, ApiError> {
    Ok(Json(m.whoami(&who)?))
}

pub async fn affinity(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<AffinityView>, ApiError> {
    Ok(Json(m.affinity(&who).await?))
}

pub async fn staging(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<Vec<StagingBytes>>, ApiError> {
    Ok(Json(m.staging_bytes(&who)?))
}

pub async fn history(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<History>, ApiError> {
    Ok(Json(m.history(&who)?))
}
