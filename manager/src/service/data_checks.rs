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
/// missing file is the admin's choice (it may be kept elsewhere) and is left alone. A
/// rotation cut short is finished first (see [`finish_admin_token_rotation`]).
pub(super) fn check_admin_token(dir: &Path, users: &[StoredUser]) -> Result<(), OpenError> {
    finish_admin_token_rotation(dir, users);
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
        // (A rotation cut short was finished above, if its new token is the stored one.)
        return Err(damaged(
            "it does not hold the admin token the database knows: cut short or altered",
        ));
    }
    Ok(())
}

/// A rotation writes `admin.token.new`, commits its hash, then renames it over
/// `admin.token`. Stopped after the commit, the new file holds the stored token: it is
/// renamed into place (WARN). Stopped before, the stored token is still the old one: the
/// unused new file is removed. A file that is neither is left for the check to judge.
fn finish_admin_token_rotation(dir: &Path, users: &[StoredUser]) {
    let next = super::new_admin_token_path(dir);
    let Ok(text) = std::fs::read(&next) else {
        return;
    };
    let Some(admin) = users.iter().find(|u| u.name == "admin") else {
        return;
    };
    let token = std::str::from_utf8(&text).map(str::trim).unwrap_or("");
    if !token.is_empty() && auth::hash(token) == admin.token_hash {
        match std::fs::rename(&next, admin_token_path(dir)) {
            Ok(()) => tracing::warn!(
                file = %next.display(),
                "finished an admin token rotation that a stop cut short: admin.token now holds the token in force"
            ),
            Err(e) => {
                tracing::warn!(file = %next.display(), error = %e, "could not finish an admin token rotation")
            }
        }
        return;
    }
    let current = std::fs::read(admin_token_path(dir)).unwrap_or_default();
    let current = std::str::from_utf8(&current).map(str::trim).unwrap_or("");
    if !current.is_empty() && auth::hash(current) == admin.token_hash {
        // The rotation stopped before the database took the new token: it never was.
        let _ = std::fs::remove_file(&next);
    }
}

#[cfg(test)]
mod rotation_tests {
    use super::*;

    fn admin_with(token: &str) -> Vec<StoredUser> {
        vec![StoredUser {
            name: "admin".into(),
            token_hash: auth::hash(token),
            admin: true,
        }]
    }

    #[test]
    fn a_rotation_cut_short_after_the_commit_is_finished_and_before_it_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let (current, next) = (
            admin_token_path(dir.path()),
            super::super::new_admin_token_path(dir.path()),
        );
        std::fs::write(&current, "hpu_old\n").unwrap();
        std::fs::write(&next, "hpu_new\n").unwrap();
        // The database took the new token: the file in force becomes the new one.
        check_admin_token(dir.path(), &admin_with("hpu_new")).unwrap();
        assert_eq!(std::fs::read_to_string(&current).unwrap().trim(), "hpu_new");
        assert!(!next.exists());
        // The database kept the old token: the new file never was in force.
        std::fs::write(&current, "hpu_old\n").unwrap();
        std::fs::write(&next, "hpu_new\n").unwrap();
        check_admin_token(dir.path(), &admin_with("hpu_old")).unwrap();
        assert_eq!(std::fs::read_to_string(&current).unwrap().trim(), "hpu_old");
        assert!(!next.exists());
        // Neither: the damaged file is refused as before, the other left alone.
        std::fs::write(&current, "hpu_cut\n").unwrap();
        std::fs::write(&next, "hpu_other\n").unwrap();
        assert!(check_admin_token(dir.path(), &admin_with("hpu_new")).is_err());
        assert!(next.exists());
    }
}
