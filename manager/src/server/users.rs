//! User and admin routes.

use super::error::ApiError;
use super::extract::{Caller, Json, Path, Query};
use super::pages::{page, PageQuery};
use crate::service::{Manager, ServiceError, TaskPage};
use axum::extract::State;
use hetpilot_protocol::protocol::ErrorBody;
use hetpilot_protocol::protocol::{
    AgentTokenInfo, AppReport, AppSummary, ForgetSummary, NewAgentToken, NewUser, PurgeRequest,
    SubmitResponse, TaskDetail, TaskInfo, TaskState, TokenResponse,
};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AppId, TaskRef};
use serde::Deserialize;
use std::sync::Arc;
use utoipa::IntoParams;

type Result<T> = std::result::Result<Json<T>, ApiError>;

#[utoipa::path(post, path = "/v1/apps", tag = "applications", request_body = AppSpec,
    responses((status = 200, description = "Stored and queued", body = SubmitResponse), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn submit(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Json(spec): Json<AppSpec>,
) -> Result<SubmitResponse> {
    Ok(Json(m.submit(&who, spec).await?))
}

/// The caller's applications (every one, for the admin), a page at a time by id.
#[utoipa::path(get, path = "/v1/apps", tag = "applications", params(PageQuery),
    responses((status = 200, description = "The caller's applications (every one, for the admin)", body = Vec<AppSummary>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn list(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(q): Query<PageQuery>,
) -> Result<Vec<AppSummary>> {
    Ok(Json(page(m.list_apps(&who)?, &q)?))
}

/// `?wait_ms=N&seen=K`: answer once more than K tasks have ended or the application has
/// finished, waiting at most N ms (a long poll; without `wait_ms`, at once).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ShowQuery {
    /// Wait at most this long for progress (at most 60000).
    wait_ms: Option<u64>,
    /// Answer once more than this many tasks have ended.
    #[serde(default)]
    seen: u64,
}

#[utoipa::path(get, path = "/v1/apps/{app}", tag = "applications", params(("app" = u64, Path, description = "The application"), ShowQuery),
    responses((status = 200, description = "The application's summary", body = AppSummary), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn show(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(app): Path<AppId>,
    Query(q): Query<ShowQuery>,
) -> Result<AppSummary> {
    match q.wait_ms {
        None | Some(0) => Ok(Json(m.app(&who, app)?)),
        Some(wait_ms) => Ok(Json(m.app_wait(&who, app, q.seen, wait_ms).await?)),
    }
}

#[utoipa::path(get, path = "/v1/apps/{app}/report", tag = "applications", params(("app" = u64, Path, description = "The application")),
    responses((status = 200, description = "How the application ran on each platform", body = AppReport), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn report(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(app): Path<AppId>,
) -> Result<AppReport> {
    Ok(Json(m.report(&who, app).await?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TaskQuery {
    /// Only tasks in this state (waiting, leased, running, done, failed, cancelled).
    state: Option<String>,
    /// At most this many (1 to 100000; default 1000).
    limit: Option<u64>,
    /// Skipping this many first.
    offset: Option<u64>,
    /// Only tasks whose index is greater: the last index of the page before.
    after: Option<u64>,
}

#[utoipa::path(get, path = "/v1/apps/{app}/tasks", tag = "applications", params(("app" = u64, Path, description = "The application"), TaskQuery),
    responses((status = 200, description = "A page of the application's tasks, in index order", body = Vec<TaskInfo>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn tasks(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(app): Path<AppId>,
    Query(q): Query<TaskQuery>,
) -> Result<Vec<TaskInfo>> {
    let state = match q.state.as_deref() {
        None => None,
        Some(s) => Some(TaskState::parse(s).ok_or_else(|| {
            ServiceError::BadRequest(format!(
                "unknown state `{s}`; use one of waiting, leased, running, done, failed, cancelled"
            ))
        })?),
    };
    Ok(Json(
        m.tasks(
            &who,
            app,
            state,
            TaskPage {
                limit: q.limit.unwrap_or(1000),
                offset: q.offset.unwrap_or(0),
                after: q.after,
            },
        )
        .await?,
    ))
}

#[utoipa::path(get, path = "/v1/tasks/{task}", tag = "applications",
    params(("task" = String, Path, description = "The task, `APP.INDEX`")),
    responses((status = 200, description = "The task with every attempt", body = TaskDetail), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn task(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(task): Path<String>,
) -> Result<TaskDetail> {
    let task: TaskRef = task.parse().map_err(ServiceError::NotFound)?;
    let (info, history) = m.task(&who, task).await?;
    Ok(Json(TaskDetail { info, history }))
}

#[utoipa::path(post, path = "/v1/apps/{app}/cancel", tag = "applications", params(("app" = u64, Path, description = "The application")),
    responses((status = 200, description = "Cancelled: waiting tasks ended, running ones are killed", body = AppSummary), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn cancel(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(app): Path<AppId>,
) -> Result<AppSummary> {
    Ok(Json(m.cancel(&who, app).await?))
}

#[utoipa::path(post, path = "/v1/apps/{app}/forget", tag = "applications", params(("app" = u64, Path, description = "The application")),
    responses((status = 200, description = "The ended application was forgotten", body = ForgetSummary), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn forget(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(app): Path<AppId>,
) -> Result<ForgetSummary> {
    Ok(Json(m.forget_app(&who, app).await?))
}

#[utoipa::path(post, path = "/v1/admin/purge", tag = "admin", request_body = PurgeRequest,
    responses((status = 200, description = "Ended applications forgotten", body = ForgetSummary), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn purge(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Json(req): Json<PurgeRequest>,
) -> Result<ForgetSummary> {
    Ok(Json(m.purge(&who, req).await?))
}

#[utoipa::path(post, path = "/v1/users", tag = "admin", request_body = NewUser,
    responses((status = 200, description = "The user's new token", body = TokenResponse), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn create_user(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Json(new): Json<NewUser>,
) -> Result<TokenResponse> {
    Ok(Json(m.create_user(&who, new).await?))
}

#[utoipa::path(post, path = "/v1/agent-tokens", tag = "admin", request_body = NewAgentToken,
    responses((status = 200, description = "A new registration token", body = TokenResponse), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn create_agent_token(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Json(req): Json<NewAgentToken>,
) -> Result<TokenResponse> {
    Ok(Json(m.create_agent_token(&who, req).await?))
}

/// The registration tokens still valid, newest first, a page at a time.
#[utoipa::path(get, path = "/v1/agent-tokens", tag = "admin", params(PageQuery),
    responses((status = 200, description = "Registration tokens still valid, newest first", body = Vec<AgentTokenInfo>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn list_agent_tokens(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(q): Query<PageQuery>,
) -> Result<Vec<AgentTokenInfo>> {
    Ok(Json(page(m.list_agent_tokens(&who).await?, &q)?))
}

#[utoipa::path(post, path = "/v1/agent-tokens/{id}/revoke", tag = "admin",
    params(("id" = String, Path, description = "The token's id, as listed")),
    responses((status = 200, description = "The token revoked", body = AgentTokenInfo), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn revoke_agent_token(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<AgentTokenInfo> {
    Ok(Json(m.revoke_agent_token(&who, &id).await?))
}

#[utoipa::path(post, path = "/v1/admin/rotate-token", tag = "admin",
    responses((status = 200, description = "The caller's new admin token; the old one stops working", body = TokenResponse), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub async fn rotate_admin_token(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<TokenResponse> {
    Ok(Json(m.rotate_admin_token(&who).await?))
}
