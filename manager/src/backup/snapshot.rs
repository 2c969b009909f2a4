//! `hetpilot backup`: a consistent snapshot of a (possibly running) manager's database.

use super::check::{check_database, CheckError};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(
        "there is no database {path}: is that the manager's data directory?",
        path = .path.display()
    )]
    NoDatabase { path: PathBuf },
    #[error("{path} exists; give the backup a new name, or remove it first", path = .path.display())]
    Exists { path: PathBuf },
    #[error("cannot read the database {path}: {cause}", path = .path.display())]
    Source {
        path: PathBuf,
        cause: rusqlite::Error,
    },
    #[error("cannot write the backup {path}: {cause}", path = .path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot write the backup {path}: {cause}", path = .path.display())]
    Copy {
        path: PathBuf,
        cause: rusqlite::Error,
    },
    #[error("the backup written does not read back sound: {0}")]
    Unsound(CheckError),
}

/// Writes a snapshot of the database `db` to `dest` (mode 0600; never over an existing
/// file), checks it reads back sound, and returns its size in bytes. The snapshot is written
/// under a temporary name beside `dest` and renamed into place, so `dest` is never a
/// half-written file.
pub fn snapshot(db: &Path, dest: &Path) -> Result<u64, SnapshotError> {
    if !db.is_file() {
        return Err(SnapshotError::NoDatabase {
            path: db.to_path_buf(),
        });
    }
    if dest.symlink_metadata().is_ok() {
        return Err(SnapshotError::Exists {
            path: dest.to_path_buf(),
        });
    }
    let write_err = |cause| SnapshotError::Write {
        path: dest.to_path_buf(),
        cause,
    };
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Made mode 0600 by `tempfile`, and removed if anything below fails.
    let partial = tempfile::Builder::new()
        .prefix(".hetpilot-backup-")
        .tempfile_in(parent)
        .map_err(write_err)?;
    let source_err = |cause| SnapshotError::Source {
        path: db.to_path_buf(),
        cause,
    };
    let reader =
        Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(source_err)?;
    reader
        .busy_timeout(std::time::Duration::from_secs(30))
        .map_err(source_err)?;
    let partial_name = partial.path().to_string_lossy().into_owned();
    reader
        .execute("VACUUM INTO ?1", [&partial_name])
        .map_err(|cause| SnapshotError::Copy {
            path: dest.to_path_buf(),
            cause,
        })?;
    drop(reader);
    // VACUUM INTO does not sync what it wrote; a backup must survive a power cut.
    partial.as_file().sync_all().map_err(write_err)?;
    check_database(partial.path()).map_err(|e| SnapshotError::Unsound(e.naming(dest)))?;
    let bytes = partial.as_file().metadata().map_err(write_err)?.len();
    partial
        .persist_noclobber(dest)
        .map_err(|e| write_err(e.error))?;
    std::fs::File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(write_err)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_snapshot_is_private_sound_and_never_written_over_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("hetpilot.db");
        crate::db::open(&db).unwrap();
        let dest = dir.path().join("backup.db");
        let bytes = snapshot(&db, &dest).unwrap();
        let meta = std::fs::metadata(&dest).unwrap();
        assert_eq!(meta.len(), bytes);
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        check_database(&dest).unwrap();

        std::fs::write(&dest, b"kept").unwrap();
        let refused = snapshot(&db, &dest).unwrap_err();
        assert!(matches!(refused, SnapshotError::Exists { .. }), "{refused}");
        assert_eq!(std::fs::read(&dest).unwrap(), b"kept");
        let missing = snapshot(&dir.path().join("nothing.db"), &dir.path().join("b2.db"));
        assert!(
            matches!(missing, Err(SnapshotError::NoDatabase { .. })),
            "{missing:?}"
        );
        // Nothing half-written is left beside the backups.
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".hetpilot-backup-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
