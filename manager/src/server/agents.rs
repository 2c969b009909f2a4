//! Agent routes (and the admin's view of agents). Pulls run in a `lease` span and reports
//! in a `report` span carrying the agent's id; each leased task and each reported result
//! is a DEBUG event with its application, task and attempt (JSON logs with
//! `--log-format json`).

use super::error::ApiError;
use super::extract::{Caller, Json, Path, Query, Source};
use super::pages::{page, PageQuery};
use crate::service::Manager;
use axum::extract::State;
use hetpilot_protocol::protocol::ErrorBody;
use hetpilot_protocol::protocol::{
    AgentInfo, HeartbeatRequest, HeartbeatResponse, PullRequest, PullResponse, RegisterRequest,
    RegisterResponse, ReportRequest, ReportResponse,
};
use hetpilot_protocol::AgentId;
use std::sync::Arc;
use tracing::Instrument;

type Result<T> = std::result::Result<Json<T>, ApiError>;

#[utoipa::path(post, path = "/v1/agents", tag = "agents", request_body = RegisterRequest,
    responses((status = 200, description = "Registered: the agent's id and credential", body = RegisterResponse), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn register(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Source(source): Source,
    Json(req): Json<RegisterRequest>,
) -> Result<RegisterResponse> {
    Ok(Json(m.register(&who, source, req).await?))
}

/// Every agent by id, a page at a time (admin).
#[utoipa::path(get, path = "/v1/agents", tag = "agents", params(PageQuery),
    responses((status = 200, description = "The agents (admin)", body = Vec<AgentInfo>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn list(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(q): Query<PageQuery>,
) -> Result<Vec<AgentInfo>> {
    Ok(Json(page(m.list_agents(&who)?, &q)?))
}

#[utoipa::path(post, path = "/v1/agents/{agent}/pull", tag = "agents", params(("agent" = u64, Path, description = "The agent")), request_body = PullRequest,
    responses((status = 200, description = "Tasks leased to the agent (a long poll)", body = PullResponse), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn pull(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
    Json(req): Json<PullRequest>,
) -> Result<PullResponse> {
    let span = tracing::info_span!("lease", agent = %agent);
    let answer = m.pull(&who, agent, req).instrument(span.clone()).await?;
    span.in_scope(|| {
        for t in &answer.tasks {
            tracing::debug!(app = %t.task.app, task = %t.task, attempt = t.attempt, "leased");
        }
    });
    Ok(Json(answer))
}

#[utoipa::path(post, path = "/v1/agents/{agent}/results", tag = "agents", params(("agent" = u64, Path, description = "The agent")), request_body = ReportRequest,
    responses((status = 200, description = "The results recorded", body = ReportResponse), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn results(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
    Json(req): Json<ReportRequest>,
) -> Result<ReportResponse> {
    let span = tracing::info_span!("report", agent = %agent, results = req.results.len());
    span.in_scope(|| {
        for r in &req.results {
            tracing::debug!(app = %r.task.app, task = %r.task, attempt = r.attempt, outcome = ?r.outcome, "reported");
        }
    });
    Ok(Json(m.record(&who, agent, req).instrument(span).await?))
}

#[utoipa::path(post, path = "/v1/agents/{agent}/heartbeat", tag = "agents", params(("agent" = u64, Path, description = "The agent")), request_body = HeartbeatRequest,
    responses((status = 200, description = "What the agent should do", body = HeartbeatResponse), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn heartbeat(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
    Json(req): Json<HeartbeatRequest>,
) -> Result<HeartbeatResponse> {
    Ok(Json(m.heartbeat(&who, agent, req)?))
}

#[utoipa::path(post, path = "/v1/agents/{agent}/deregister", tag = "agents", params(("agent" = u64, Path, description = "The agent")),
    responses((status = 200, description = "`{\"deregistered\": AGENT}`", body = Object), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn deregister(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
) -> Result<serde_json::Value> {
    m.deregister(&who, agent).await?;
    Ok(Json(serde_json::json!({ "deregistered": agent })))
}

#[utoipa::path(post, path = "/v1/agents/{agent}/drain", tag = "agents", params(("agent" = u64, Path, description = "The agent")),
    responses((status = 200, description = "`{\"draining\": AGENT}`", body = Object), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn drain(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(agent): Path<AgentId>,
) -> Result<serde_json::Value> {
    m.drain(&who, agent)?;
    Ok(Json(serde_json::json!({ "draining": agent })))
}
