//! The schema changes after version 1, each the step to one version from the one before,
//! in the order they were made. Frozen once released: a new change is a new step.
//!
//! Versions 2 to 8 were made before the schema had a version, so a database without one
//! may hold any of them already: those steps add only what is missing. Steps from
//! version 9 on run only on a database that records the version before them.

use super::columns::add_column_if_missing;
use rusqlite::Connection;

/// Version 2: agents that end each task without a process (`--zero-work`).
pub fn zero_work_agents(conn: &Connection) -> rusqlite::Result<()> {
    add_column_if_missing(conn, "agents", "zero_work", "INTEGER NOT NULL DEFAULT 0")
}

/// Version 3: forgetting ended applications: when an application ended, its owners'
/// usage carried past it, and the counter that keeps forgotten ids from coming back.
pub fn retention(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS usage_carried (
            user TEXT PRIMARY KEY,
            raw REAL NOT NULL,
            decayed REAL NOT NULL,
            at REAL NOT NULL
        );
        CREATE TABLE IF NOT EXISTS counters (
            name TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        );",
    )?;
    add_column_if_missing(conn, "apps", "ended_ms", "INTEGER")
}

/// Version 4: where agents may register from, bound to their registration token.
pub fn registration_sources(conn: &Connection) -> rusqlite::Result<()> {
    add_column_if_missing(conn, "agent_tokens", "register_from", "TEXT")
}

/// Version 5: attempts lost to the infrastructure, counted apart from `max_attempts`.
pub fn lost_attempts(conn: &Connection) -> rusqlite::Result<()> {
    add_column_if_missing(conn, "tasks", "lost_attempts", "INTEGER NOT NULL DEFAULT 0")
}

/// Version 6: GPUs and named counts: an agent's offer and each attempt's grant (JSON).
pub fn resources(conn: &Connection) -> rusqlite::Result<()> {
    add_column_if_missing(conn, "agents", "resources", "TEXT")?;
    add_column_if_missing(conn, "attempts", "resources", "TEXT")
}

/// Version 7: when an ended pilot's directory was removed.
pub fn pilot_dir_retention(conn: &Connection) -> rusqlite::Result<()> {
    add_column_if_missing(conn, "pilots", "dir_removed_ms", "INTEGER")
}

/// Version 8: multi-node pilots: the nodes asked for and the agents registered (JSON).
pub fn multi_node_pilots(conn: &Connection) -> rusqlite::Result<()> {
    add_column_if_missing(conn, "pilots", "nodes", "INTEGER")?;
    add_column_if_missing(conn, "pilots", "members", "TEXT")
}

/// Version 9: the order tasks ended in, the event stream's cursor (`tasks.end_seq`, see
/// `task_ends`), with an index to page through one application's ends. The ends already
/// stored are numbered in task order (their true order was not kept); 3, 4 and 5 are the
/// codes of done, failed and cancelled.
pub fn task_end_order(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "ALTER TABLE tasks ADD COLUMN end_seq INTEGER;
         UPDATE tasks SET end_seq = idx + 1 WHERE state IN (3, 4, 5);
         CREATE INDEX tasks_end_seq ON tasks(app_id, end_seq) WHERE end_seq IS NOT NULL;",
    )
}

/// Version 10: parallel tasks: the agents a run held, the head first (JSON: agent, host,
/// slots).
pub fn parallel_runs(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("ALTER TABLE attempts ADD COLUMN hosts TEXT;")
}

/// Version 11: the variant each attempt ran as (its name; NULL for an application without
/// variants).
pub fn variants(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("ALTER TABLE attempts ADD COLUMN variant TEXT;")
}

/// Version 12: the applications that held a fraction of the same GPU during each attempt
/// (JSON list of ids; NULL for a run without a fractional GPU).
pub fn device_co_runners(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("ALTER TABLE attempts ADD COLUMN device_co_runners TEXT;")
}

/// Version 13: the hash of the key each agent registered with, so a registration tried
/// again after its answer was lost gets the same agent (NULL for agents that sent none).
pub fn registration_keys(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("ALTER TABLE agents ADD COLUMN registration_key_hash TEXT;")
}
