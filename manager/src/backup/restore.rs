//! `hetpilot restore`: puts a backup in place of a stopped manager's database.

use super::check::{check_database, CheckError};
use crate::data_dir_lock::{DataDirLock, LockError};
use crate::service::{database_path, private_data_dir};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("cannot use data directory {dir}: {cause}", dir = .dir.display())]
    DataDir { dir: PathBuf, cause: std::io::Error },
    #[error("{0}, then run the restore again")]
    Locked(LockError),
    #[error("cannot read the backup {path}: {cause}", path = .path.display())]
    Backup {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path} is not a regular file; give the backup file itself", path = .path.display())]
    NotAFile { path: PathBuf },
    #[error("refused, nothing was changed: {0}")]
    Unsound(CheckError),
    #[error("refused, nothing was changed: the backup {path}: {problem}", path = .path.display())]
    Schema {
        path: PathBuf,
        problem: crate::db::SchemaError,
    },
    #[error("{path} exists; wait a second and run the restore again", path = .path.display())]
    AsideExists { path: PathBuf },
    #[error("cannot put the database in place in {dir}: {cause}", dir = .dir.display())]
    Swap { dir: PathBuf, cause: std::io::Error },
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// The database now in place.
    pub database: PathBuf,
    /// Where the database it replaced was moved, if there was one.
    pub kept_aside: Option<PathBuf>,
}

/// Restores `backup` into `data_dir` (created, mode 0700, if missing): refused while a
/// manager holds the directory's lock, when the backup is not a sound hetpilot database, or
/// when a newer release wrote it; either way nothing in the directory is changed. The
/// database it replaces, with its WAL files, is renamed to
/// `hetpilot.db.before-restore-TIME`.
pub fn restore(backup: &Path, data_dir: &Path) -> Result<Restored, RestoreError> {
    let dir_err = |cause| RestoreError::DataDir {
        dir: data_dir.to_path_buf(),
        cause,
    };
    private_data_dir(data_dir).map_err(dir_err)?;
    // Held until the new database is in place, so no manager starts on a half-done restore.
    let _lock = DataDirLock::acquire(data_dir).map_err(RestoreError::Locked)?;
    let backup_err = |cause| RestoreError::Backup {
        path: backup.to_path_buf(),
        cause,
    };
    // A pipe or a device would be read without end (into the data directory's disk).
    if !std::fs::metadata(backup).map_err(backup_err)?.is_file() {
        return Err(RestoreError::NotAFile {
            path: backup.to_path_buf(),
        });
    }
    let mut source = std::fs::File::open(backup).map_err(backup_err)?;
    // The copy, not the caller's file, is checked and renamed into place: what is checked
    // is what the manager will open. Mode 0600; removed if anything below fails.
    let mut copy = tempfile::Builder::new()
        .prefix(".hetpilot-restore-")
        .tempfile_in(data_dir)
        .map_err(dir_err)?;
    std::io::copy(&mut source, copy.as_file_mut()).map_err(backup_err)?;
    copy.as_file().sync_all().map_err(dir_err)?;
    check_database(copy.path()).map_err(|e| RestoreError::Unsound(e.naming(backup)))?;
    // A newer release's database would be refused at the next start: refused here instead,
    // while the database it would replace is still in place.
    crate::db::openable_version(copy.path()).map_err(|problem| RestoreError::Schema {
        path: backup.to_path_buf(),
        problem,
    })?;

    let swap_err = |cause| RestoreError::Swap {
        dir: data_dir.to_path_buf(),
        cause,
    };
    let database = database_path(data_dir);
    let kept_aside = if database.exists() {
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        let aside = with_suffix(&database, &format!(".before-restore-{stamp}"));
        if aside.symlink_metadata().is_ok() {
            return Err(RestoreError::AsideExists { path: aside });
        }
        // The WAL may hold committed changes of a manager that was killed: it goes aside
        // with its database (and keeps its pairing there), never under the restored one.
        for suffix in ["-wal", "-shm"] {
            let file = with_suffix(&database, suffix);
            if file.exists() {
                std::fs::rename(&file, with_suffix(&aside, suffix)).map_err(swap_err)?;
            }
        }
        std::fs::rename(&database, &aside).map_err(swap_err)?;
        Some(aside)
    } else {
        None
    };
    copy.persist(&database).map_err(|e| swap_err(e.error))?;
    std::fs::File::open(data_dir)
        .and_then(|d| d.sync_all())
        .map_err(swap_err)?;
    Ok(Restored {
        database,
        kept_aside,
    })
}

/// `path` with `suffix` appended to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}
