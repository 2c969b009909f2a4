//! Files over HTTP, as the manager's file service and the agent's file store both serve
//! them: a download streams one file from disk, whole or the single `Range: bytes=A-B`
//! asked for; an upload streams to a temporary file in the target's directory, which is
//! synced, renamed into place and its directory synced, so a reader never sees half a
//! file and a crash never leaves one under the real name.

use crate::byte_range;
use axum::body::Body;
use axum::http::header::{ACCEPT_RANGES, CONTENT_LENGTH, CONTENT_RANGE, RANGE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::TryStreamExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// Bytes read from disk per chunk sent, and buffered per write (few large I/Os, not many
/// 4 KiB ones).
const CHUNK: usize = 256 * 1024;

/// Why a download or an upload failed; [`HttpFileError::status`] is what to answer.
#[derive(Debug, thiserror::Error)]
pub enum HttpFileError {
    #[error("`{0}` is a directory, not a file")]
    NotAFile(String),
    #[error("range `{spec}` is not one range within the file's {len} bytes")]
    BadRange { spec: String, len: u64 },
    #[error("the upload was interrupted: {0}")]
    Interrupted(String),
    #[error("the upload is larger than this server accepts")]
    TooLarge,
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl HttpFileError {
    pub fn status(&self) -> StatusCode {
        match self {
            HttpFileError::NotAFile(_) => StatusCode::NOT_FOUND,
            HttpFileError::BadRange { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
            HttpFileError::Interrupted(_) => StatusCode::BAD_REQUEST,
            HttpFileError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            HttpFileError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                StatusCode::NOT_FOUND
            }
            HttpFileError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HttpFileError {
    let what = what.into();
    move |source| HttpFileError::Io { what, source }
}

/// The answer to a `GET` (or `HEAD`) of the file at `path` (`name` in messages), and the
/// bytes its body carries.
pub async fn send(
    path: &Path,
    name: &str,
    headers: &HeaderMap,
) -> Result<(Response, u64), HttpFileError> {
    let what = format!("file `{name}`");
    let mut file = tokio::fs::File::open(path).await.map_err(io(&what))?;
    let meta = file.metadata().await.map_err(io(&what))?;
    if !meta.is_file() {
        return Err(HttpFileError::NotAFile(name.to_string()));
    }
    let len = meta.len();
    let range = match headers.get(RANGE).and_then(|v| v.to_str().ok()) {
        None => None,
        Some(spec) => Some(
            byte_range::parse(spec, len).map_err(|_| HttpFileError::BadRange {
                spec: spec.to_string(),
                len,
            })?,
        ),
    };
    let (status, start, count) = match range {
        None => (StatusCode::OK, 0, len),
        Some((a, b)) => (StatusCode::PARTIAL_CONTENT, a, b - a + 1),
    };
    file.seek(std::io::SeekFrom::Start(start))
        .await
        .map_err(io(&what))?;
    let body = Body::from_stream(tokio_util::io::ReaderStream::with_capacity(
        file.take(count),
        CHUNK,
    ));
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(CONTENT_LENGTH, count.into());
    h.insert(ACCEPT_RANGES, "bytes".parse().expect("ASCII header value"));
    if let Some((a, b)) = range {
        let value = format!("bytes {a}-{b}/{len}");
        h.insert(CONTENT_RANGE, value.parse().expect("ASCII header value"));
    }
    Ok((resp, count))
}

/// Stores `body` as `dest` (whose directory exists), atomically and durably; returns the
/// bytes written.
pub async fn receive(dest: &Path, body: Body) -> Result<u64, HttpFileError> {
    static UPLOADS: AtomicU64 = AtomicU64::new(0);
    let dir = dest.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".upload-{}-{}",
        std::process::id(),
        UPLOADS.fetch_add(1, Ordering::Relaxed)
    ));
    let stored = async {
        let n = write_synced(&tmp, body).await?;
        tokio::fs::rename(&tmp, dest)
            .await
            .map_err(io("storing the upload"))?;
        let d = tokio::fs::File::open(dir)
            .await
            .map_err(io("syncing the directory"))?;
        d.sync_all().await.map_err(io("syncing the directory"))?;
        Ok(n)
    }
    .await;
    if stored.is_err() {
        let _ = tokio::fs::remove_file(&tmp).await;
    }
    stored
}

/// A body that failed while read: over a `RequestBodyLimitLayer`'s limit, or interrupted.
fn body_error(e: axum::Error) -> HttpFileError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return HttpFileError::TooLarge;
        }
        source = s.source();
    }
    HttpFileError::Interrupted(e.to_string())
}

async fn write_synced(tmp: &Path, body: Body) -> Result<u64, HttpFileError> {
    let file = tokio::fs::File::create(tmp)
        .await
        .map_err(io("creating the upload"))?;
    let mut out = tokio::io::BufWriter::with_capacity(CHUNK, file);
    let mut stream = body.into_data_stream();
    let mut n = 0u64;
    while let Some(chunk) = stream.try_next().await.map_err(body_error)? {
        n += chunk.len() as u64;
        out.write_all(&chunk)
            .await
            .map_err(io("writing the upload"))?;
    }
    out.flush().await.map_err(io("writing the upload"))?;
    out.get_ref()
        .sync_all()
        .await
        .map_err(io("syncing the upload"))?;
    Ok(n)
}
