//! The file service over HTTP: `GET`/`PUT /v1/files/NAME` (a user's own files) and
//! `GET`/`PUT /v1/apps/APP/files/NAME` (an application owner's files, for its agents).
//! Downloads stream from disk and honour a single `Range: bytes=A-B`; uploads stream to a
//! synced temporary file renamed into place, so a reader never sees half a file
//! (`hetpilot_transport::http_file`, shared with the agent's file store).
//! `GET /v1/files?prefix=P&after=NAME&limit=N` lists a page of the caller's own files and
//! `DELETE /v1/files/NAME` removes one. `GET /v1/file-stats` (admin) counts requests and
//! bytes.

use super::error::ApiError;
use super::extract::{Caller, Path, Query};
use crate::service::{Manager, Principal, ServiceError, ServiceFile};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use hetpilot_protocol::file_listing::FilePage;
use hetpilot_protocol::protocol::ErrorBody;
use hetpilot_protocol::AppId;
use hetpilot_transport::beneath;
use hetpilot_transport::http_file::{self, HttpFileError};
use serde::Deserialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tower_http::limit::RequestBodyLimitLayer;

/// What the file service has served since the manager started.
#[derive(Debug, Default)]
pub struct FileStats {
    pub get_requests: AtomicU64,
    pub put_requests: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub bytes_received: AtomicU64,
}

pub(super) struct Files {
    manager: Arc<Manager>,
    stats: FileStats,
}

/// The file service's routes; an upload larger than `limits.max_file_mib` gets 413, also
/// when it is sent chunked.
pub fn router(manager: Arc<Manager>) -> Router {
    let max_file = manager.settings.limits.file_bytes();
    let state = Arc::new(Files {
        manager,
        stats: FileStats::default(),
    });
    Router::new()
        .route("/v1/files", get(list_user))
        .route(
            "/v1/files/{*name}",
            get(get_user).put(put_user).delete(delete_user),
        )
        .route("/v1/apps/{app}/files/{*name}", get(get_app).put(put_app))
        .route("/v1/file-stats", get(stats))
        .layer(RequestBodyLimitLayer::new(max_file))
        .with_state(state)
}

#[utoipa::path(get, path = "/v1/file-stats", tag = "files",
    responses((status = 200, description = "Requests and bytes served since the manager started (admin)", body = Object), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub(super) async fn stats(
    State(f): State<Arc<Files>>,
    Caller(who): Caller,
) -> Result<Json<serde_json::Value>, ApiError> {
    match who {
        Principal::User { admin: true, .. } => {
            let s = &f.stats;
            let v = |c: &AtomicU64| c.load(Ordering::Relaxed);
            Ok(Json(serde_json::json!({
                "get_requests": v(&s.get_requests),
                "put_requests": v(&s.put_requests),
                "bytes_sent": v(&s.bytes_sent),
                "bytes_received": v(&s.bytes_received),
            })))
        }
        _ => Err(ServiceError::Forbidden("this call needs the admin token".into()).into()),
    }
}

#[utoipa::path(get, path = "/v1/files/{name}", tag = "files", params(("name" = String, Path, description = "The file's name; `/` separates folders"), ("Range" = Option<String>, Header, description = "One `bytes=A-B` range")),
    responses((status = 200, description = "The file", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, description = "The range asked for", content_type = "application/octet-stream", body = Vec<u8>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub(super) async fn get_user(
    State(f): State<Arc<Files>>,
    Caller(who): Caller,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let file = f.manager.user_file(&who, &name)?;
    send(&f, file, &name, &headers).await
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Only names that start with this.
    prefix: Option<String>,
    /// Only names after this one (the last of the page before).
    after: Option<String>,
    /// At most this many.
    limit: Option<u64>,
}

#[utoipa::path(get, path = "/v1/files", tag = "files", params(ListQuery),
    responses((status = 200, description = "A page of the caller's files", body = FilePage), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub(super) async fn list_user(
    State(f): State<Arc<Files>>,
    Caller(who): Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<FilePage>, ApiError> {
    let m = f.manager.clone();
    let page = tokio::task::spawn_blocking(move || {
        m.list_user_files(&who, q.prefix.as_deref(), q.after.as_deref(), q.limit)
    })
    .await
    .map_err(|e| ServiceError::Io(e.to_string()))??;
    Ok(Json(page))
}

#[utoipa::path(delete, path = "/v1/files/{name}", tag = "files", params(("name" = String, Path, description = "The file's name; `/` separates folders")),
    responses((status = 200, description = "`{\"removed\": NAME, \"size\": BYTES}`", body = Object), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub(super) async fn delete_user(
    State(f): State<Arc<Files>>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let m = f.manager.clone();
    let removed = name.clone();
    let size = tokio::task::spawn_blocking(move || m.remove_user_file(&who, &removed))
        .await
        .map_err(|e| ServiceError::Io(e.to_string()))??;
    Ok(Json(serde_json::json!({ "removed": name, "size": size })))
}

#[utoipa::path(get, path = "/v1/apps/{app}/files/{name}", tag = "files", params(("app" = u64, Path, description = "The application"), ("name" = String, Path, description = "The file's name; `/` separates folders"), ("Range" = Option<String>, Header, description = "One `bytes=A-B` range")),
    responses((status = 200, description = "The application owner's file", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, description = "The range asked for", content_type = "application/octet-stream", body = Vec<u8>), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub(super) async fn get_app(
    State(f): State<Arc<Files>>,
    Caller(who): Caller,
    Path((app, name)): Path<(AppId, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let file = f.manager.app_file(&who, app, &name)?;
    send(&f, file, &name, &headers).await
}

#[utoipa::path(put, path = "/v1/files/{name}", tag = "files", params(("name" = String, Path, description = "The file's name; `/` separates folders")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 201, description = "Stored (replacing any file of that name)"), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub(super) async fn put_user(
    State(f): State<Arc<Files>>,
    Caller(who): Caller,
    Path(name): Path<String>,
    req: Request,
) -> Result<StatusCode, ApiError> {
    let file = f.manager.user_file(&who, &name)?;
    receive(&f, file, req.into_body()).await
}

#[utoipa::path(put, path = "/v1/apps/{app}/files/{name}", tag = "files", params(("app" = u64, Path, description = "The application"), ("name" = String, Path, description = "The file's name; `/` separates folders")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 201, description = "Stored as the application owner's file"), (status = "4XX", description = "Refused: the error says why", body = ErrorBody)))]
pub(super) async fn put_app(
    State(f): State<Arc<Files>>,
    Caller(who): Caller,
    Path((app, name)): Path<(AppId, String)>,
    req: Request,
) -> Result<StatusCode, ApiError> {
    let file = f.manager.app_file(&who, app, &name)?;
    receive(&f, file, req.into_body()).await
}

impl From<HttpFileError> for ApiError {
    fn from(e: HttpFileError) -> Self {
        ApiError::with_status(e.status(), e.to_string())
    }
}

/// Opens `file` beneath its owner's directory, off the async runtime.
async fn open(file: &ServiceFile) -> std::io::Result<std::fs::File> {
    let (root, rel) = (file.root.clone(), file.rel.clone());
    tokio::task::spawn_blocking(move || beneath::open_read(&root, &rel))
        .await
        .map_err(std::io::Error::other)?
}

fn open_error(name: &str, e: &std::io::Error) -> ApiError {
    let status = beneath::status_of(e, false);
    let message = match status {
        StatusCode::NOT_FOUND => format!("no file `{}`", name.escape_debug()),
        StatusCode::URI_TOO_LONG => "a name in the path is too long".into(),
        _ => format!("file `{}`: {e}", name.escape_debug()),
    };
    ApiError::with_status(status, message)
}

async fn send(
    f: &Files,
    file: ServiceFile,
    name: &str,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    f.stats.get_requests.fetch_add(1, Ordering::Relaxed);
    let opened = open(&file).await.map_err(|e| open_error(name, &e))?;
    let (resp, count) =
        http_file::send_open(tokio::fs::File::from_std(opened), name, headers).await?;
    f.stats.bytes_sent.fetch_add(count, Ordering::Relaxed);
    Ok(resp)
}

async fn receive(f: &Files, file: ServiceFile, body: Body) -> Result<StatusCode, ApiError> {
    f.stats.put_requests.fetch_add(1, Ordering::Relaxed);
    let allowance = f.manager.upload_allowance(&file)?;
    let replaced = match open(&file).await {
        Ok(old) => old.metadata().map_or(0, |m| m.len()),
        Err(_) => 0,
    };
    let n = http_file::receive_beneath(&file.root, &file.rel, body, allowance).await?;
    f.manager.file_stored(&file.owner, n, replaced);
    f.stats.bytes_received.fetch_add(n, Ordering::Relaxed);
    Ok(StatusCode::CREATED)
}
