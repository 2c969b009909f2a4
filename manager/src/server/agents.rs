//! Agent routes (and the admin's view of agents).

use super::error::ApiError;
use super::extract::{Caller, Json, Path};
use crate::service::Manager;
use axum::extract::State;
use hetpilot_protocol::protocol::{
    AgentInfo, HeartbeatRequest, HeartbeatResponse, PullRequest, PullResponse, RegisterRequest,
    RegisterResponse, ReportRequest, ReportResponse,
};
use hetpilot_protocol::AgentId;
use std::sync::Arc;

type Result<T> = std::result::Result<Json<T>, ApiError>;

pub async fn register(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Json(req): Json<RegisterRequest>,
) -> Result<RegisterResponse> {
    Ok(Json(m.register(&who, req).await?))
}

pub async fn list(State(m): State<Arc<Manager>>, Caller(who): Caller) -> Result<Vec<AgentInfo>> {
    Ok(Json(m.list_agents(&who)?))
}

pub async fn pull(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
    Json(req): Json<PullRequest>,
) -> Result<PullResponse> {
    Ok(Json(m.pull(&who, agent, req).await?))
}

pub async fn results(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
    Json(req): Json<ReportRequest>,
) -> Result<ReportResponse> {
    Ok(Json(m.record(&who, agent, req).await?))
}

pub async fn heartbeat(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
    Json(req): Json<HeartbeatRequest>,
) -> Result<HeartbeatResponse> {
    Ok(Json(m.heartbeat(&who, agent, req)?))
}

pub async fn deregister(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
) -> Result<serde_json::Value> {
    m.deregister(&who, agent).await?;
    Ok(Json(serde_json::json!({ "deregistered": agent })))
}

pub async fn drain(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
) -> Result<serde_json::Value> {
    m.drain(&who, agent)?;
    Ok(Json(serde_json::json!({ "draining": agent })))
}
