//! Schema version 1: the tables of the oldest data directories this build opens (those
//! written before the schema had a version), as they were then. Later columns and tables
//! come from the migrations after it, so a new database is built the way an old one is
//! upgraded. Frozen: a change to the schema is a new migration, never an edit here.

use super::columns::add_column_if_missing;
use rusqlite::Connection;

const TABLES: &str = r#"
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
CREATE TABLE IF NOT EXISTS attempt_staging (
    app_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    bytes_fetched INTEGER NOT NULL,
    bytes_cached INTEGER NOT NULL,
    bytes_uploaded INTEGER NOT NULL,
    transfers TEXT NOT NULL,
    PRIMARY KEY (app_id, idx, attempt)
) WITHOUT ROWID;
"#;

/// Creates the version 1 tables where they are missing. Data directories older still had
/// `agent_tokens` without `created_ms` and `pilots` without `user`: those are added.
pub fn tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(TABLES)?;
    add_column_if_missing(conn, "agent_tokens", "created_ms", "INTEGER")?;
    add_column_if_missing(conn, "pilots", "user", "TEXT")
}
