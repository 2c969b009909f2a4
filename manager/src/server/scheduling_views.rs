//! Read-only views of live scheduling: `GET /v1/schedule` (the current allocation),
//! `/v1/usage` (fairshare usage per user) and `/v1/bandwidths` (measured transfer
//! bandwidths).

use super::error::ApiError;
use super::extract::{Caller, Json, Query};
use super::pages::{page, PageQuery};
use crate::service::Manager;
use axum::extract::State;
use hetpilot_protocol::protocol::ErrorBody;
use hetpilot_protocol::views::{BandwidthRow, ScheduleView, UserUsage};
use std::sync::Arc;

#[utoipa::path(get, path = "/v1/schedule", tag = "scheduling",
    responses((status = 200, description = "Cores per application per platform", body = ScheduleView), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn schedule(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Json<ScheduleView>, ApiError> {
    Ok(Json(m.schedule(&who)?))
}

/// Fairshare usage by user name, a page at a time.
#[utoipa::path(get, path = "/v1/usage", tag = "scheduling", params(PageQuery),
    responses((status = 200, description = "Fairshare usage and priority per user", body = Vec<UserUsage>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn usage(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(q): Query<PageQuery>,
) -> Result<Json<Vec<UserUsage>>, ApiError> {
    Ok(Json(page(m.usage(&who)?, &q)?))
}

/// Measured bandwidths by platform and endpoint (endpoints come from the files users
/// stage, so the rows grow with use), a page at a time.
#[utoipa::path(get, path = "/v1/bandwidths", tag = "scheduling", params(PageQuery),
    responses((status = 200, description = "Measured transfer bandwidths", body = Vec<BandwidthRow>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn bandwidths(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(q): Query<PageQuery>,
) -> Result<Json<Vec<BandwidthRow>>, ApiError> {
    Ok(Json(page(m.bandwidths(&who)?, &q)?))
}
