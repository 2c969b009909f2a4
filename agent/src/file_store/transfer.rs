//! Moving bytes: downloads stream from disk and honour a single `Range`; uploads stream to
//! a temporary file in the target's directory, which is synced, then renamed into place
//! (and the directory synced), so a reader never sees half a file and a crash never
//! leaves one under the real name.

use super::StoreError;
use axum::body::Body;
use axum::http::header::{ACCEPT_RANGES, CONTENT_LENGTH, CONTENT_RANGE, RANGE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::TryStreamExt;
use hetpilot_shared::byte_range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// Bytes read from disk per chunk sent.
const READ_CHUNK: usize = 256 * 1024;

fn io_error(what: &str, e: std::io::Error) -> StoreError {
    tracing::error!(error = %e, what, "file store I/O");
    StoreError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        message: format!("{what}: {e}"),
    }
}

/// Answers a `GET` (or `HEAD`) for the file at `path`.
pub async fn send(path: &Path, name: &str, headers: &HeaderMap) -> Result<Response, StoreError> {
    let mut file = tokio::fs::File::open(path)
        .await
        .map_err(|e| io_error(name, e))?;
    let meta = file.metadata().await.map_err(|e| io_error(name, e))?;
    if !meta.is_file() {
        return Err(StoreError {
            status: StatusCode::NOT_FOUND,
            message: format!("`{name}` is a directory, not a file"),
        });
    }
    let len = meta.len();
    let range = match headers.get(RANGE).and_then(|v| v.to_str().ok()) {
        None => None,
        Some(spec) => Some(byte_range::parse(spec, len).map_err(|_| StoreError {
            status: StatusCode::RANGE_NOT_SATISFIABLE,
            message: format!("range `{spec}` is not one range within the file's {len} bytes"),
        })?),
    };
    let (status, start, count) = match range {
        None => (StatusCode::OK, 0, len),
        Some((a, b)) => (StatusCode::PARTIAL_CONTENT, a, b - a + 1),
    };
    file.seek(std::io::SeekFrom::Start(start))
        .await
        .map_err(|e| io_error(name, e))?;
    let body = Body::from_stream(tokio_util::io::ReaderStream::with_capacity(
        file.take(count),
        READ_CHUNK,
    ));
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(CONTENT_LENGTH, count.into());
    h.insert(ACCEPT_RANGES, "bytes".parse().expect("ASCII header value"));
    if let Some((a, b)) = range {
        let value = format!("bytes {a}-{b}/{len}");
        h.insert(CONTENT_RANGE, value.parse().expect("ASCII header value"));
    }
    Ok(resp)
}

/// Stores `body` as `dir/file`; returns the bytes written.
pub async fn receive(dir: &Path, file: &str, body: Body) -> Result<u64, StoreError> {
    static UPLOADS: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".upload-{}-{}",
        std::process::id(),
        UPLOADS.fetch_add(1, Ordering::Relaxed)
    ));
    match write_synced(&tmp, body).await {
        Ok(n) => {
            tokio::fs::rename(&tmp, dir.join(file))
                .await
                .map_err(|e| io_error("storing the upload", e))?;
            let d = tokio::fs::File::open(dir)
                .await
                .map_err(|e| io_error("syncing the directory", e))?;
            d.sync_all()
                .await
                .map_err(|e| io_error("syncing the directory", e))?;
            Ok(n)
        }
        Err(e) => {
            let _ = tokio::fs::remove_file(&tmp).await;
            Err(e)
        }
    }
}

async fn write_synced(tmp: &Path, body: Body) -> Result<u64, StoreError> {
    let file = tokio::fs::File::create(tmp)
        .await
        .map_err(|e| io_error("creating the upload", e))?;
    let mut out = tokio::io::BufWriter::with_capacity(READ_CHUNK, file);
    let mut stream = body.into_data_stream();
    let mut n = 0u64;
    while let Some(chunk) = stream.try_next().await.map_err(|e| StoreError {
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
    out.get_ref()
        .sync_all()
        .await
        .map_err(|e| io_error("syncing the upload", e))?;
    Ok(n)
}
