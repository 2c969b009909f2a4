//! The file service over HTTP: `GET`/`PUT /v1/files/NAME` (a user's own files) and
//! `GET`/`PUT /v1/apps/APP/files/NAME` (an application owner's files, for its agents).
//! Downloads stream from disk and honour a single `Range: bytes=A-B`; uploads stream to a
//! temporary file renamed into place, so a reader never sees half a file.
//! `GET /v1/file-stats` (admin) counts requests and bytes.

use super::error::ApiError;
use super::extract::Path;
use crate::service::{Manager, Principal, ServiceError};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_RANGE, RANGE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures_util::TryStreamExt;
use hetpilot_shared::{byte_range, AppId};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// What the file service has served since the manager started.
#[derive(Debug, Default)]
pub struct FileStats {
    pub get_requests: AtomicU64,
    pub put_requests: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub bytes_received: AtomicU64,
}

/// Bytes read from disk per chunk sent (few large reads, not many 4 KiB ones).
const READ_CHUNK: usize = 256 * 1024;

struct Files {
    manager: Arc<Manager>,
    stats: FileStats,
}

pub fn router(manager: Arc<Manager>) -> Router {
    let state = Arc::new(Files {
        manager,
        stats: FileStats::default(),
    });
    Router::new()
        .route("/v1/files/{*name}", get(get_user).put(put_user))
        .route("/v1/apps/{app}/files/{*name}", get(get_app).put(put_app))
        .route("/v1/file-stats", get(stats))
        .with_state(state)
}

fn caller(files: &Files, headers: &HeaderMap) -> Result<Principal, ServiceError> {
    let token = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    files.manager.authenticate(token)
}

async fn stats(
    State(f): State<Arc<Files>>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    match caller(&f, &headers)? {
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

async fn get_user(
    State(f): State<Arc<Files>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let who = caller(&f, &headers)?;
    let path = f.manager.user_file(&who, &name)?;
    send(&f, path, &name, &headers).await
}

async fn get_app(
    State(f): State<Arc<Files>>,
    Path((app, name)): Path<(AppId, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let who = caller(&f, &headers)?;
    let path = f.manager.app_file(&who, app, &name)?;
    send(&f, path, &name, &headers).await
}

async fn put_user(
    State(f): State<Arc<Files>>,
    Path(name): Path<String>,
    req: Request,
) -> Result<StatusCode, ApiError> {
    let who = caller(&f, req.headers())?;
    let path = f.manager.user_file(&who, &name)?;
    receive(&f, path, req.into_body()).await
}

async fn put_app(
    State(f): State<Arc<Files>>,
    Path((app, name)): Path<(AppId, String)>,
    req: Request,
) -> Result<StatusCode, ApiError> {
    let who = caller(&f, req.headers())?;
    let path = f.manager.app_file(&who, app, &name)?;
    receive(&f, path, req.into_body()).await
}

fn io_error(what: &str, e: std::io::Error) -> ApiError {
    let status = match e.kind() {
        std::io::ErrorKind::NotFound => StatusCode::NOT_FOUND,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    if status.is_server_error() {
        tracing::error!(error = %e, what, "file service");
    }
    ApiError {
        status,
        message: format!("{what}: {e}"),
    }
}

/// A single `bytes=A-B` or `bytes=A-` range within `len`; `None` for the whole file.
fn range(headers: &HeaderMap, len: u64) -> Result<Option<(u64, u64)>, ApiError> {
    let Some(spec) = headers.get(RANGE).and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    byte_range::parse(spec, len)
        .map(Some)
        .map_err(|_| ApiError {
            status: StatusCode::RANGE_NOT_SATISFIABLE,
            message: format!("range `{spec}` is not one range within the file's {len} bytes"),
        })
}

async fn send(
    f: &Files,
    path: PathBuf,
    name: &str,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    f.stats.get_requests.fetch_add(1, Ordering::Relaxed);
    let mut file = tokio::fs::File::open(&path)
        .await
        .map_err(|e| io_error(&format!("file `{name}`"), e))?;
    let meta = file
        .metadata()
        .await
        .map_err(|e| io_error(&format!("file `{name}`"), e))?;
    if !meta.is_file() {
        return Err(ApiError {
            status: StatusCode::NOT_FOUND,
            message: format!("`{name}` is a directory, not a file"),
        });
    }
    let len = meta.len();
    let (status, start, count, content_range) = match range(headers, len)? {
        None => (StatusCode::OK, 0, len, None),
        Some((a, b)) => (
            StatusCode::PARTIAL_CONTENT,
            a,
            b - a + 1,
            Some(format!("bytes {a}-{b}/{len}")),
        ),
    };
    file.seek(std::io::SeekFrom::Start(start))
        .await
        .map_err(|e| io_error(&format!("file `{name}`"), e))?;
    f.stats.bytes_sent.fetch_add(count, Ordering::Relaxed);
    let body = Body::from_stream(tokio_util::io::ReaderStream::with_capacity(
        file.take(count),
        READ_CHUNK,
    ));
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(CONTENT_LENGTH, count.into());
    if let Some(cr) = content_range {
        h.insert(CONTENT_RANGE, cr.parse().expect("ASCII header value"));
    }
    Ok(resp)
}

async fn receive(f: &Files, path: PathBuf, body: Body) -> Result<StatusCode, ApiError> {
    f.stats.put_requests.fetch_add(1, Ordering::Relaxed);
    let dir = path.parent().expect("under the files root").to_path_buf();
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| io_error("creating the file's directory", e))?;
    let tmp = dir.join(format!(
        ".upload-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    let written = write_body(&tmp, body).await;
    match written {
        Ok(n) => {
            f.stats.bytes_received.fetch_add(n, Ordering::Relaxed);
            tokio::fs::rename(&tmp, &path)
                .await
                .map_err(|e| io_error("storing the upload", e))?;
            Ok(StatusCode::CREATED)
        }
        Err(e) => {
            let _ = tokio::fs::remove_file(&tmp).await;
            Err(e)
        }
    }
}

async fn write_body(tmp: &std::path::Path, body: Body) -> Result<u64, ApiError> {
    let file = tokio::fs::File::create(tmp)
        .await
        .map_err(|e| io_error("creating the upload", e))?;
    let mut out = tokio::io::BufWriter::with_capacity(READ_CHUNK, file);
    let mut stream = body.into_data_stream();
    let mut n = 0u64;
    while let Some(chunk) = stream.try_next().await.map_err(|e| ApiError {
        status: StatusCode::BAD_REQUEST,
        message: format!("the upload was interrupted: {e}"),
    })? {
        n += chunk.len() as u64;
        out.write_all(&chunk)
            .await
            .map_err(|e| io_error("writing the upload", e))?;
    }
    out.flush()
        .await
        .map_err(|e| io_error("writing the upload", e))?;
    Ok(n)
}
