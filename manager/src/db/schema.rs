//! The schema, created on first open; connections are opened in WAL mode.

use rusqlite::Connection;
use std::path::Path;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    is_admin INTEGER NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS agent_tokens (
    token_hash TEXT PRIMARY KEY,
    platform TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    created_ms INTEGER
);
CREATE TABLE IF NOT EXISTS agents (
    id INTEGER PRIMARY KEY,
    credential_hash TEXT NOT NULL UNIQUE,
    platform TEXT NOT NULL,
    hostname TEXT NOT NULL,
    cores INTEGER NOT NULL,
    memory_mb INTEGER NOT NULL,
    slots INTEGER NOT NULL,
    batch_job_id TEXT,
    walltime_end INTEGER,
    registered_ms INTEGER NOT NULL,
    state TEXT NOT NULL,
    ended_ms INTEGER
);
CREATE TABLE IF NOT EXISTS apps (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    submitted_ms INTEGER NOT NULL,
    cancelled INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS apps_owner ON apps(owner);
CREATE TABLE IF NOT EXISTS tasks (
    app_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    input TEXT,
    state INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    agent_id INTEGER,
    PRIMARY KEY (app_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attempts (
    app_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    agent_id INTEGER NOT NULL,
    leased_ms INTEGER NOT NULL,
    started_ms INTEGER,
    ended_ms INTEGER,
    outcome TEXT,
    exit_code INTEGER,
    signal INTEGER,
    wall_ms REAL,
    user_cpu_ms REAL,
    sys_cpu_ms REAL,
    max_rss_kb INTEGER,
    co_runners TEXT,
    stdout_path TEXT,
    stderr_path TEXT,
    output_tail TEXT,
    error TEXT,
    PRIMARY KEY (app_id, idx, attempt)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pilots (
    name TEXT PRIMARY KEY,
    platform TEXT NOT NULL,
    batch_job_id TEXT,
    state TEXT NOT NULL,
    reason TEXT NOT NULL,
    submitted_ms INTEGER NOT NULL,
    job_started_ms INTEGER,
    registered_ms INTEGER,
    ended_ms INTEGER,
    agent_id INTEGER,
    walltime_end_ms INTEGER,
    credential_hash TEXT,
    credential_expires_ms INTEGER,
    user TEXT
);
"#;

/// Task states as stored (`tasks.state`).
pub fn state_code(s: hetpilot_protocol::protocol::TaskState) -> i64 {
    hetpilot_protocol::protocol::TaskState::ALL
        .iter()
        .position(|x| *x == s)
        .expect("every state is listed") as i64
}

pub fn state_from_code(code: i64) -> Option<hetpilot_protocol::protocol::TaskState> {
    hetpilot_protocol::protocol::TaskState::ALL
        .get(usize::try_from(code).ok()?)
        .copied()
}

/// Opens (creating if needed) the database at `path` in WAL mode with the schema.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL: a committed transaction survives power loss, not only a killed process.
    // Group commit makes that affordable: one fsync per batch of changes.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch(super::staging::SCHEMA)?;
    conn.execute_batch(super::forget::SCHEMA)?;
    add_column_if_missing(&conn, "agent_tokens", "created_ms", "INTEGER")?;
    add_column_if_missing(&conn, "agent_tokens", "register_from", "TEXT")?;
    add_column_if_missing(&conn, "pilots", "user", "TEXT")?;
    add_column_if_missing(&conn, "pilots", "dir_removed_ms", "INTEGER")?;
    // Multi-node pilots: the nodes asked for and the group of agents (JSON) registered.
    add_column_if_missing(&conn, "pilots", "nodes", "INTEGER")?;
    add_column_if_missing(&conn, "pilots", "members", "TEXT")?;
    add_column_if_missing(&conn, "agents", "zero_work", "INTEGER NOT NULL DEFAULT 0")?;
    add_column_if_missing(&conn, "apps", "ended_ms", "INTEGER")?;
    add_column_if_missing(
        &conn,
        "tasks",
        "lost_attempts",
        "INTEGER NOT NULL DEFAULT 0",
    )?;
    // GPUs and named counts: an agent's offer, and what each attempt was granted (JSON).
    add_column_if_missing(&conn, "agents", "resources", "TEXT")?;
    add_column_if_missing(&conn, "attempts", "resources", "TEXT")?;
    // A parallel run's agents, the head first (JSON: agent, host, slots).
    add_column_if_missing(&conn, "attempts", "hosts", "TEXT")?;
    Ok(conn)
}

/// Upgrades a database made by an earlier version: adds a column it lacks.
fn add_column_if_missing(
    conn: &Connection,
    table: &str,
    column: &str,
    declaration: &str,
) -> rusqlite::Result<()> {
    let present = conn
        .prepare(&format!(
            "SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1"
        ))?
        .exists([column])?;
    if !present {
        conn.execute_batch(&format!(
            "ALTER TABLE {table} ADD COLUMN {column} {declaration}"
        ))?;
    }
    Ok(())
}
