//! What start-up checks in the data directory before it trusts it: the database file is
//! whole (SQLite's `quick_check`, or `integrity_check` with `full_check`), and the admin
//! token file still holds the token whose hash the database keeps. Anything damaged stops
//! start-up with one line naming the file and what to do; nothing is rewritten over it.

use super::{admin_token_path, auth, OpenError};
use crate::db::{self, Depth, StoredUser};
use std::path::Path;

/// An error of the database at `path`: its damage when SQLite reports damage.
pub(super) fn database_error(path: &Path, source: rusqlite::Error) -> OpenError {
    if db::is_damage(&source) {
        OpenError::DamagedDatabase {
            path: path.to_path_buf(),
            problem: source.to_string(),
        }
    } else {
        OpenError::Database {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Refuses the database at `path` (in the data directory `dir`) if SQLite finds it damaged,
/// or if it is missing or empty while the admin token file says the directory was started
/// before; reads nothing else from it and writes nothing to it.
pub(super) fn check_database(dir: &Path, path: &Path, depth: Depth) -> Result<(), OpenError> {
    let empty = match std::fs::metadata(path) {
        Ok(meta) => meta.len() == 0,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(source) => {
            return Err(OpenError::DataDir {
                dir: dir.to_path_buf(),
                source,
            })
        }
    };
    if empty {
        let admin_token = admin_token_path(dir);
        if admin_token.exists() {
            return Err(OpenError::UsersLost {
                database: path.to_path_buf(),
                admin_token,
            });
        }
        return Ok(());
    }
    // Read-only: closing it checkpoints nothing into a file found damaged.
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| database_error(path, e))?;
    let found = db::problems(&conn, depth).map_err(|e| database_error(path, e))?;
    match found.first() {
        None => Ok(()),
        Some(first) => Err(OpenError::DamagedDatabase {
            path: path.to_path_buf(),
            problem: match found.len() {
                1 => first.clone(),
                n => format!("{first}; {} more", n - 1),
            },
        }),
    }
}

/// Refuses an admin token file that is not the stored `admin` user's token. A database
/// without users next to an admin token file lost them (a first start makes both); a
/// missing file is the admin's choice (it may be kept elsewhere) and is left alone.
pub(super) fn check_admin_token(dir: &Path, users: &[StoredUser]) -> Result<(), OpenError> {
    let path = admin_token_path(dir);
    let damaged = |problem: &str| OpenError::DamagedAdminToken {
        path: path.clone(),
        problem: problem.to_string(),
    };
    let text = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(damaged(&format!("unreadable: {e}"))),
    };
    if users.is_empty() {
        return Err(OpenError::UsersLost {
            database: super::database_path(dir),
            admin_token: path,
        });
    }
    let Some(admin) = users.iter().find(|u| u.name == "admin") else {
        return Ok(());
    };
    let token = std::str::from_utf8(&text).map(str::trim).unwrap_or("");
    if token.is_empty() {
        return Err(damaged("it is empty"));
    }
    if auth::hash(token) != admin.token_hash {
        return Err(damaged(
            "it does not hold the admin token the database knows: cut short or altered",
        ));
    }
    Ok(())
}
