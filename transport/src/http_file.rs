//! Files over HTTP, as the manager's file service and the agent's file store both serve
//! them: a download streams one file from disk, whole or the single `Range: bytes=A-B`
//! asked for; an upload streams to a temporary file in the target's directory, which is
//! synced, renamed into place and its directory synced, so a reader never sees half a
//! file and a crash never leaves one under the real name. A download is opaque bytes to
//! a browser too: `application/octet-stream`, `nosniff` and `attachment`, whatever its
//! name or contents, so a user's file is never rendered as a page of the server's origin.

use axum::body::Body;
use axum::http::header::{
    ACCEPT_RANGES, CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, RANGE,
    X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::TryStreamExt;
use hetpilot_protocol::byte_range;
use std::io::ErrorKind;
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
    #[error("the upload is larger than the {0} bytes its owner may still store (per-file limit or quota)")]
    OverAllowance(u64),
    /// Opening beneath the owner's root failed (see [`crate::beneath::status_of`]).
    #[error("{}", beneath_message(.0))]
    Beneath(std::io::Error),
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
            HttpFileError::TooLarge | HttpFileError::OverAllowance(_) => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            HttpFileError::Beneath(e) => crate::beneath::status_of(e, true),
            HttpFileError::Io { source, .. } => match source.kind() {
                // A name under a file (`a.txt/x`) does not exist either.
                ErrorKind::NotFound | ErrorKind::NotADirectory => StatusCode::NOT_FOUND,
                // Storing onto a directory, or a directory where a file is.
                ErrorKind::IsADirectory | ErrorKind::AlreadyExists => StatusCode::CONFLICT,
                // A name the filesystem refuses as too long.
                _ if source.raw_os_error()
                    == Some(rustix::io::Errno::NAMETOOLONG.raw_os_error()) =>
                {
                    StatusCode::BAD_REQUEST
                }
                // No room on the disk (or in the quota) the file goes to.
                _ if matches!(
                    source
                        .raw_os_error()
                        .map(rustix::io::Errno::from_raw_os_error),
                    Some(rustix::io::Errno::NOSPC | rustix::io::Errno::DQUOT)
                ) =>
                {
                    StatusCode::INSUFFICIENT_STORAGE
                }
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }
}

fn beneath_message(e: &std::io::Error) -> String {
    match crate::beneath::status_of(e, true) {
        StatusCode::NOT_FOUND => "no such file (or a path through a link or a file)".into(),
        StatusCode::CONFLICT => "a directory is in the way".into(),
        StatusCode::URI_TOO_LONG => "a name in the path is too long".into(),
        StatusCode::BAD_REQUEST => "not a relative file name".into(),
        _ => format!("file service: {e}"),
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
    let file = tokio::fs::File::open(path).await.map_err(io(&what))?;
    send_open(file, name, headers).await
}

/// Like [`send`], for a file already opened (e.g. with [`crate::beneath::open_read`]).
pub async fn send_open(
    mut file: tokio::fs::File,
    name: &str,
    headers: &HeaderMap,
) -> Result<(Response, u64), HttpFileError> {
    let what = format!("file `{name}`");
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
    h.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(CONTENT_DISPOSITION, HeaderValue::from_static("attachment"));
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

/// Stores `body` as `rel` beneath `root` (see [`crate::beneath`]): directories are
/// created as needed, no link is followed, and a body longer than `max_bytes` is refused
/// (`OverAllowance`) without storing anything. Returns the bytes written.
pub async fn receive_beneath(
    root: &Path,
    rel: &Path,
    body: Body,
    max_bytes: u64,
) -> Result<u64, HttpFileError> {
    static UPLOADS: AtomicU64 = AtomicU64::new(0);
    let (root, rel_owned) = (root.to_path_buf(), rel.to_path_buf());
    let tmp = format!(
        ".upload-{}-{}",
        std::process::id(),
        UPLOADS.fetch_add(1, Ordering::Relaxed)
    );
    let name = rel
        .file_name()
        .map(std::path::PathBuf::from)
        .ok_or_else(|| HttpFileError::Beneath(std::io::ErrorKind::InvalidInput.into()))?;
    let t = tmp.clone();
    let (dir, file) = tokio::task::spawn_blocking(move || {
        let dir = crate::beneath::Dir::parent_of(&root, &rel_owned)?;
        let file = dir.create_temp(&t)?;
        Ok::<_, std::io::Error>((dir, file))
    })
    .await
    .map_err(|e| HttpFileError::Interrupted(e.to_string()))?
    .map_err(HttpFileError::Beneath)?;
    let dir = std::sync::Arc::new(dir);
    let written = write_open(tokio::fs::File::from_std(file), body, max_bytes).await;
    let (d, t) = (dir.clone(), tmp.clone());
    let stored = match written {
        Ok(n) => tokio::task::spawn_blocking(move || {
            d.rename(&t, &name)?;
            d.sync()?;
            Ok::<_, std::io::Error>(n)
        })
        .await
        .map_err(|e| HttpFileError::Interrupted(e.to_string()))?
        .map_err(HttpFileError::Beneath),
        Err(e) => Err(e),
    };
    if stored.is_err() {
        let _ = dir.remove(&tmp);
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
    write_open(file, body, u64::MAX).await
}

async fn write_open(
    file: tokio::fs::File,
    body: Body,
    max_bytes: u64,
) -> Result<u64, HttpFileError> {
    let mut out = tokio::io::BufWriter::with_capacity(CHUNK, file);
    let mut stream = body.into_data_stream();
    let mut n = 0u64;
    while let Some(chunk) = stream.try_next().await.map_err(body_error)? {
        n = n.saturating_add(chunk.len() as u64);
        if n > max_bytes {
            return Err(HttpFileError::OverAllowance(max_bytes));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(errno: i32) -> StatusCode {
        HttpFileError::Io {
            what: "file `x`".into(),
            source: std::io::Error::from_raw_os_error(errno),
        }
        .status()
    }

    #[test]
    fn caller_mistakes_on_the_filesystem_are_not_server_errors() {
        // These were all 500 (found by the API fuzz run): `a.txt/x` (ENOTDIR), a PUT onto a
        // directory (EISDIR), a directory where a file is (EEXIST), a name the filesystem
        // refuses (ENAMETOOLONG).
        assert_eq!(status_of(20), StatusCode::NOT_FOUND);
        assert_eq!(status_of(21), StatusCode::CONFLICT);
        assert_eq!(status_of(17), StatusCode::CONFLICT);
        assert_eq!(status_of(36), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(2), StatusCode::NOT_FOUND);
        // A full disk or quota (ENOSPC, EDQUOT) is told apart from the server's other
        // problems (EIO).
        assert_eq!(status_of(28), StatusCode::INSUFFICIENT_STORAGE);
        assert_eq!(status_of(122), StatusCode::INSUFFICIENT_STORAGE);
        assert_eq!(status_of(5), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test]
    async fn downloads_are_opaque_bytes_whatever_their_name_and_contents() {
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("page.html");
        std::fs::write(
            &page,
            "<html><script>alert(document.domain)</script></html>",
        )
        .unwrap();
        let mut ranged = HeaderMap::new();
        ranged.insert(RANGE, HeaderValue::from_static("bytes=0-5"));
        for headers in [HeaderMap::new(), ranged] {
            let (resp, _) = send(&page, "page.html", &headers).await.unwrap();
            let h = resp.headers();
            assert_eq!(h[CONTENT_TYPE], "application/octet-stream");
            assert_eq!(h[X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert_eq!(h[CONTENT_DISPOSITION], "attachment");
        }
    }
}
