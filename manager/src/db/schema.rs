//! Opening the database: connections in WAL mode, and on the writer's connection the
//! schema brought to this build's version (`migrations`).

use super::migrations::{self, SchemaError};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// Opens a connection to the database at `path` (creating the file if needed) in WAL mode,
/// without touching its schema.
pub fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    Ok(conn)
}

/// Opens (creating if needed) the database at `path` in WAL mode and brings its schema to
/// this build's version. A database of a newer version is refused before anything is
/// written to it.
pub fn open(path: &Path) -> Result<Connection, SchemaError> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    migrations::refuse_unknown(&conn)?;
    configure(&conn)?;
    migrations::migrate(&mut conn)?;
    Ok(conn)
}

/// The schema version of the database at `path`, opened read-only, if this build opens
/// it; changes nothing in the file.
pub fn openable_version(path: &Path) -> Result<i64, SchemaError> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    migrations::refuse_unknown(&conn)
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL: a committed transaction survives power loss, not only a killed process.
    // Group commit makes that affordable: one fsync per batch of changes.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")
}
