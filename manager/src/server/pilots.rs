//! Admin routes for provisioning: the pilots and the platforms' provisioning status.

use super::error::ApiError;
use super::extract::{Caller, Json, Query};
use super::pages::{page, PageQuery};
use crate::service::{Manager, PlatformStatus};
use axum::extract::State;
use hetpilot_protocol::pilots::{PilotRecord, PlatformsReloaded};
use hetpilot_protocol::protocol::ErrorBody;
use std::sync::Arc;

type Result<T> = std::result::Result<Json<T>, ApiError>;

/// Every pilot, oldest first, a page at a time.
#[utoipa::path(get, path = "/v1/pilots", tag = "pilots", params(PageQuery),
    responses((status = 200, description = "Pilots: batch jobs, states, reasons (admin)", body = Vec<PilotRecord>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn list(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(q): Query<PageQuery>,
) -> Result<Vec<PilotRecord>> {
    Ok(Json(page(m.list_pilots(&who)?, &q)?))
}

/// One row per platform of the manager's configuration file, so the listing is as small
/// as the admin made that file and is answered whole, unpaged.
#[utoipa::path(get, path = "/v1/platforms", tag = "pilots",
    responses((status = 200, description = "Each platform's provisioning status", body = Vec<PlatformStatus>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn platforms(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Vec<PlatformStatus>> {
    Ok(Json(m.list_platform_status(&who)?))
}

#[utoipa::path(post, path = "/v1/platforms/reload", tag = "pilots",
    responses((status = 200, description = "The platform profiles re-read", body = PlatformsReloaded), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn reload_platforms(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<PlatformsReloaded> {
    Ok(Json(m.reload_platforms(&who).await?))
}
