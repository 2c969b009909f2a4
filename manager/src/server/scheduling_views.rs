//! Read-only views of live scheduling: `GET /v1/schedule` (the current allocation),
//! `/v1/usage` (fairshare usage per user) and `/v1/bandwidths` (measured transfer
//! bandwidths).

use super::error::ApiError;
use super::extract::{Caller, Json};
use crate::service::Manager;
use axum::extract::State;
use hetpilot_protocol::views::{BandwidthRow, ScheduleView, UserUsage};
use std::sync::Arc;

pub async fn schedule(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<ScheduleView>, ApiError> {
    Ok(Json(m.schedule(&who)?))
}

pub async fn usage(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<Vec<UserUsage>>, ApiError> {
    Ok(Json(m.usage(&who)?))
}

pub async fn bandwidths(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<Vec<BandwidthRow>>, ApiError> {
    Ok(Json(m.bandwidths(&who)?))
}
