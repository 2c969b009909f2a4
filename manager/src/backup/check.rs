//! Whether a file is a sound hetpilot database: SQLite's `quick_check` finds nothing, and
//! the tables every manager since the first has written are there.

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

/// Tables a hetpilot database always has.
const EXPECTED_TABLES: [&str; 7] = [
    "users",
    "agent_tokens",
    "agents",
    "apps",
    "tasks",
    "attempts",
    "pilots",
];

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("{path} is not a readable SQLite database: {cause}", path = .path.display())]
    Unreadable {
        path: PathBuf,
        cause: rusqlite::Error,
    },
    #[error("{path} is damaged (SQLite quick_check: {problem})", path = .path.display())]
    Damaged { path: PathBuf, problem: String },
    #[error(
        "{path} is not a hetpilot database: it has no table `{table}`",
        path = .path.display()
    )]
    NotHetpilot { path: PathBuf, table: &'static str },
}

impl CheckError {
    /// The same finding about a copy, told of the file it was copied from or to.
    pub fn naming(self, file: &Path) -> CheckError {
        let path = file.to_path_buf();
        match self {
            CheckError::Unreadable { cause, .. } => CheckError::Unreadable { path, cause },
            CheckError::Damaged { problem, .. } => CheckError::Damaged { path, problem },
            CheckError::NotHetpilot { table, .. } => CheckError::NotHetpilot { path, table },
        }
    }
}

/// Checks `path`, opened read-only; changes nothing in it.
pub fn check_database(path: &Path) -> Result<(), CheckError> {
    let unreadable = |cause| CheckError::Unreadable {
        path: path.to_path_buf(),
        cause,
    };
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(unreadable)?;
    // The first row is "ok", or the first of the problems found.
    let verdict: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(unreadable)?;
    if verdict != "ok" {
        return Err(CheckError::Damaged {
            path: path.to_path_buf(),
            problem: verdict,
        });
    }
    let mut has_table = conn
        .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1")
        .map_err(unreadable)?;
    for table in EXPECTED_TABLES {
        if !has_table.exists([table]).map_err(unreadable)? {
            return Err(CheckError::NotHetpilot {
                path: path.to_path_buf(),
                table,
            });
        }
    }
    Ok(())
}
