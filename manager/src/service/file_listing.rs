//! Listing and removing a user's own files in the file service: pages of names in order
//! under an optional prefix (bounded by `MAX_FILES_PER_PAGE`), and one file removed at a
//! time. Names a caller sends are checked like file names before anything is read; the
//! walk follows no link, and an upload still being written (its temporary file) is not
//! listed.

use super::{Manager, Principal, ServiceError};
use hetpilot_protocol::file_listing::{FileEntry, FilePage, MAX_FILES_PER_PAGE};
use hetpilot_protocol::files::MAX_NAME_BYTES;
use std::path::Path;
use std::time::UNIX_EPOCH;

/// The prefix of an upload's temporary file (`hetpilot_transport::http_file`).
const UPLOAD_TEMP_PREFIX: &str = ".upload-";

/// Refuses a name a caller sent for `field` that no file could have.
fn check_name_part(field: &str, value: &str) -> Result<(), ServiceError> {
    if value.len() > MAX_NAME_BYTES {
        return Err(ServiceError::BadRequest(format!(
            "{field}: longer than {MAX_NAME_BYTES} bytes"
        )));
    }
    if value.contains('\0') || value.split('/').any(|c| c == "..") || value.starts_with('/') {
        return Err(ServiceError::BadRequest(format!(
            "{field}: `{}` is not a file name (absolute, `..` or NUL)",
            value.escape_debug()
        )));
    }
    Ok(())
}

fn user_of(who: &Principal) -> Result<&str, ServiceError> {
    match who {
        Principal::User { name, .. } => Ok(name),
        _ => Err(ServiceError::Forbidden(
            "this call needs a user token".into(),
        )),
    }
}

/// Adds the files under `dir` (named `rel/...`) that start with `prefix` to `out`,
/// following no link.
fn walk(dir: &Path, rel: &str, prefix: &str, out: &mut Vec<FileEntry>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(leaf) = entry.file_name().into_string() else {
            continue;
        };
        if leaf.starts_with(UPLOAD_TEMP_PREFIX) {
            continue;
        }
        let name = if rel.is_empty() {
            leaf
        } else {
            format!("{rel}/{leaf}")
        };
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            // A directory is walked only when names under it can start with the prefix.
            let as_dir = format!("{name}/");
            if prefix.starts_with(&as_dir) || as_dir.starts_with(prefix) {
                walk(&entry.path(), &name, prefix, out);
            }
        } else if kind.is_file() && name.starts_with(prefix) {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            let modified_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            out.push(FileEntry {
                name,
                size: meta.len(),
                modified_ms,
            });
        }
    }
}

impl Manager {
    /// A page of `who`'s own files whose names start with `prefix`, those after `after` in
    /// name order, at most `limit` (default and most: `MAX_FILES_PER_PAGE`).
    pub fn list_user_files(
        &self,
        who: &Principal,
        prefix: Option<&str>,
        after: Option<&str>,
        limit: Option<u64>,
    ) -> Result<FilePage, ServiceError> {
        let user = user_of(who)?;
        let prefix = prefix.unwrap_or("");
        check_name_part("prefix", prefix)?;
        if let Some(a) = after {
            check_name_part("after", a)?;
        }
        let limit = match limit.unwrap_or(MAX_FILES_PER_PAGE) {
            0 => return Err(ServiceError::BadRequest("limit: must be at least 1".into())),
            n if n > MAX_FILES_PER_PAGE => {
                return Err(ServiceError::BadRequest(format!(
                    "limit: at most {MAX_FILES_PER_PAGE} files a page"
                )))
            }
            n => n as usize,
        };
        // A user without a usable name has no files (see `owned_file`).
        if !super::bounds::is_user_name(user) {
            return Ok(FilePage::default());
        }
        let mut files = Vec::new();
        walk(&self.files_root().join(user), "", prefix, &mut files);
        files.retain(|f| after.is_none_or(|a| f.name.as_str() > a));
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let next = (files.len() > limit).then(|| files[limit - 1].name.clone());
        files.truncate(limit);
        Ok(FilePage { files, next })
    }

    /// Removes `who`'s own file `name`; returns its size.
    pub fn remove_user_file(&self, who: &Principal, name: &str) -> Result<u64, ServiceError> {
        let file = self.user_file(who, name)?;
        let not_found = || ServiceError::NotFound(format!("no file `{}`", name.escape_debug()));
        let size = hetpilot_transport::beneath::open_read(&file.root, &file.rel)
            .and_then(|f| f.metadata())
            .map_err(|_| not_found())?
            .len();
        let leaf = file
            .rel
            .file_name()
            .and_then(|l| l.to_str())
            .ok_or_else(not_found)?;
        let dir = hetpilot_transport::beneath::Dir::parent_of(&file.root, &file.rel)
            .map_err(|_| not_found())?;
        dir.remove(leaf).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => not_found(),
            _ => ServiceError::Io(format!("removing `{}`: {e}", name.escape_debug())),
        })?;
        self.file_stored(&file.owner, 0, size);
        Ok(size)
    }
}
