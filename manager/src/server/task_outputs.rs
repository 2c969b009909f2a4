//! Task outputs over HTTP (see `service::task_outputs`): `GET /v1/tasks/{task}/output`
//! `?attempt=N&stream=out|err` for the task's owner or an admin (a single `Range` honoured,
//! so `hetpilot logs --tail` fetches only the end; `x-hetpilot-output-skipped` says how many
//! bytes at the start the manager did not keep), and
//! `PUT /v1/agents/{agent}/outputs/{task}/{attempt}/{stream}` for the agent asked to send
//! it, at most `limits.max_output_mib` (413 beyond).

use super::error::ApiError;
use super::extract::{Caller, Path, Query};
use crate::service::{Manager, ServiceError, StoredOutput};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::{get, put};
use axum::Router;
use hetpilot_protocol::protocol::ErrorBody;
use hetpilot_protocol::protocol::TaskAttempt;
use hetpilot_protocol::task_output::{OutputStream, SKIPPED_HEADER};
use hetpilot_protocol::{AgentId, TaskRef};
use hetpilot_transport::{beneath, http_file};
use serde::Deserialize;
use std::io::Write;
use std::sync::Arc;
use tower_http::limit::RequestBodyLimitLayer;

/// The output routes; an upload longer than `limits.max_output_mib` gets 413.
pub fn router(manager: Arc<Manager>) -> Router {
    let max = usize::try_from(manager.settings.limits.output_bytes()).unwrap_or(usize::MAX);
    Router::new()
        .route("/v1/tasks/{task}/output", get(read))
        .route(
            "/v1/agents/{agent}/outputs/{task}/{attempt}/{stream}",
            put(store),
        )
        .layer(RequestBodyLimitLayer::new(max))
        .with_state(manager)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ReadQuery {
    /// The run (default: the last).
    attempt: Option<u32>,
    /// `out` (the default) or `err`.
    stream: Option<String>,
}

fn task_ref(task: &str) -> Result<TaskRef, ApiError> {
    Ok(task.parse().map_err(ServiceError::NotFound)?)
}

fn stream_of(s: &str) -> Result<OutputStream, ApiError> {
    Ok(s.parse().map_err(ServiceError::BadRequest)?)
}

#[utoipa::path(get, path = "/v1/tasks/{task}/output", tag = "applications",
    params(("task" = String, Path, description = "The task, `APP.INDEX`"), ReadQuery, ("Range" = Option<String>, Header, description = "One `bytes=A-B` range")),
    responses((status = 200, description = "One output stream of one run", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, description = "The range asked for", content_type = "application/octet-stream", body = Vec<u8>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub(super) async fn read(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path(task): Path<String>,
    Query(q): Query<ReadQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let stream = stream_of(q.stream.as_deref().unwrap_or("out"))?;
    let stored = m
        .task_output(&who, task_ref(&task)?, q.attempt, stream)
        .await?;
    let (file, skipped) = tokio::task::spawn_blocking(move || {
        let file = beneath::open_read(&stored.root, &stored.rel)?;
        Ok::<_, std::io::Error>((file, stored.skipped()))
    })
    .await
    .map_err(|e| ServiceError::Io(e.to_string()))?
    .map_err(|e| ServiceError::Io(format!("reading a stored output: {e}")))?;
    let name = format!("{task} {}", stream.as_str());
    let (mut resp, _) =
        http_file::send_open(tokio::fs::File::from_std(file), &name, &headers).await?;
    resp.headers_mut()
        .insert(SKIPPED_HEADER, HeaderValue::from(skipped));
    Ok(resp)
}

#[utoipa::path(put, path = "/v1/agents/{agent}/outputs/{task}/{attempt}/{stream}", tag = "agents",
    params(("agent" = u64, Path, description = "The agent"), ("task" = String, Path, description = "The task, `APP.INDEX`"),
        ("attempt" = u32, Path, description = "The run"), ("stream" = String, Path, description = "`out` or `err`")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 201, description = "Stored for its readers"), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub(super) async fn store(
    State(m): State<Arc<Manager>>,
    Caller(who): Caller,
    Path((agent, task, attempt, stream)): Path<(AgentId, String, u32, String)>,
    req: Request,
) -> Result<StatusCode, ApiError> {
    let run = TaskAttempt {
        task: task_ref(&task)?,
        attempt,
    };
    let stream = stream_of(&stream)?;
    let skipped = match req.headers().get(SKIPPED_HEADER) {
        None => 0,
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| {
                ServiceError::BadRequest(format!("header `{SKIPPED_HEADER}` is not a byte count"))
            })?,
    };
    let stored = m.output_upload(&who, agent, run, stream)?;
    let note = stored.clone();
    tokio::task::spawn_blocking(move || note_skipped(&note, skipped))
        .await
        .map_err(|e| ServiceError::Io(e.to_string()))?
        .map_err(|e| ServiceError::Io(format!("storing an output: {e}")))?;
    let max = m.settings.limits.output_bytes();
    http_file::receive_beneath(&stored.root, &stored.rel, req.into_body(), max).await?;
    m.output_arrived();
    Ok(StatusCode::CREATED)
}

/// Notes beside the output how many bytes at its start were not sent (none: no note).
fn note_skipped(stored: &StoredOutput, skipped: u64) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&stored.root)?;
    let dir = beneath::Dir::parent_of(&stored.root, &stored.skipped_rel)?;
    let name = stored
        .skipped_rel
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    if skipped == 0 {
        return match dir.remove(name) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    let mut file = dir.create_replacing(name, 0o600)?;
    write!(file, "{skipped}")
}
