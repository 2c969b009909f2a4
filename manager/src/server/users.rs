//! User and admin routes.

use super::error::ApiError;
use super::extract::{Caller, Json, Path, Query};
use super::pages::{page, PageQuery};
use crate::service::{Manager, ServiceError, TaskPage};
use axum::extract::State;
use hetpilot_protocol::protocol::{
    AgentTokenInfo, AppReport, AppSummary, ForgetSummary, NewAgentToken, NewUser, PurgeRequest,
    SubmitResponse, TaskDetail, TaskInfo, TaskState, TokenResponse,
};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AppId, TaskRef};
use serde::Deserialize;
use std::sync::Arc;

type Result<T> = std::result::Result<Json<T>, ApiError>;

pub async fn submit(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Json(spec): Json<AppSpec>,
) -> Result<SubmitResponse> {
    Ok(Json(m.submit(&who, spec).await?))
}

/// The caller's applications (every one, for the admin), a page at a time by id.
pub async fn list(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(q): Query<PageQuery>,
) -> Result<Vec<AppSummary>> {
    Ok(Json(page(m.list_apps(&who)?, &q)?))
}

/// `?wait_ms=N&seen=K`: answer once more than K tasks have ended or the application has
/// finished, waiting at most N ms (a long poll; without `wait_ms`, at once).
#[derive(Deserialize)]
pub struct ShowQuery {
    wait_ms: Option<u64>,
    #[serde(default)]
    seen: u64,
}

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

pub async fn report(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(app): Path<AppId>,
) -> Result<AppReport> {
    Ok(Json(m.report(&who, app).await?))
}

#[derive(Deserialize)]
pub struct TaskQuery {
    state: Option<String>,
    limit: Option<u64>,
    offset: Option<u64>,
    /// Only tasks whose index is greater: the last index of the page before.
    after: Option<u64>,
}

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

pub async fn task(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(task): Path<String>,
) -> Result<TaskDetail> {
    let task: TaskRef = task.parse().map_err(ServiceError::NotFound)?;
    let (info, history) = m.task(&who, task).await?;
    Ok(Json(TaskDetail { info, history }))
}

pub async fn cancel(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(app): Path<AppId>,
) -> Result<AppSummary> {
    Ok(Json(m.cancel(&who, app).await?))
}

pub async fn forget(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(app): Path<AppId>,
) -> Result<ForgetSummary> {
    Ok(Json(m.forget_app(&who, app).await?))
}

pub async fn purge(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Json(req): Json<PurgeRequest>,
) -> Result<ForgetSummary> {
    Ok(Json(m.purge(&who, req).await?))
}

pub async fn create_user(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Json(new): Json<NewUser>,
) -> Result<TokenResponse> {
    Ok(Json(m.create_user(&who, new).await?))
}

pub async fn create_agent_token(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Json(req): Json<NewAgentToken>,
) -> Result<TokenResponse> {
    Ok(Json(m.create_agent_token(&who, req).await?))
}

/// The registration tokens still valid, newest first, a page at a time.
pub async fn list_agent_tokens(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Query(q): Query<PageQuery>,
) -> Result<Vec<AgentTokenInfo>> {
    Ok(Json(page(m.list_agent_tokens(&who).await?, &q)?))
}

pub async fn revoke_agent_token(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<AgentTokenInfo> {
    Ok(Json(m.revoke_agent_token(&who, &id).await?))
}

pub async fn rotate_admin_token(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
) -> Result<TokenResponse> {
    Ok(Json(m.rotate_admin_token(&who).await?))
}
