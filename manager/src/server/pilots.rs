//! Admin routes for provisioning: the pilots and the platforms' provisioning status.

use super::error::ApiError;
use super::extract::{Caller, Json};
use crate::service::{Manager, PlatformStatus};
use axum::extract::State;
use hetpilot_protocol::pilots::{PilotRecord, PlatformsReloaded};
use std::sync::Arc;

type Result<T> = std::result::Result<Json<T>, ApiError>;

pub async fn list(State(m): State<Arc<Manager>>, Caller(who): Caller) -> Result<Vec<PilotRecord>> {
    Ok(Json(m.list_pilots(&who)?))
}

pub async fn platforms(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<Vec<PlatformStatus>> {
    Ok(Json(m.list_platform_status(&who)?))
}

pub async fn reload_platforms(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<PlatformsReloaded> {
    Ok(Json(m.reload_platforms(&who).await?))
}
