//! The schema's version and the ordered migrations that bring a database to it. The
//! version is SQLite's `PRAGMA user_version`: 0 for a new file and for the data
//! directories written before the schema had a version, else the last migration applied.
//! Each migration runs in its own transaction with the version it reaches, so a start cut
//! short leaves the database at one version or the next, never between. A database of a
//! version newer than this build knows is refused before anything is written to it.

mod base;
mod columns;
mod steps;

use rusqlite::{Connection, TransactionBehavior};

/// One step of the schema: `apply` takes a database at `version - 1` to `version`.
struct Migration {
    version: i64,
    what: &'static str,
    apply: fn(&Connection) -> rusqlite::Result<()>,
}

/// Every migration, oldest first; versions count up from 1 without gaps.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "the tables",
        apply: base::tables,
    },
    Migration {
        version: 2,
        what: "zero-work agents",
        apply: steps::zero_work_agents,
    },
    Migration {
        version: 3,
        what: "retention of ended applications",
        apply: steps::retention,
    },
    Migration {
        version: 4,
        what: "where agents register from",
        apply: steps::registration_sources,
    },
    Migration {
        version: 5,
        what: "attempts lost to the infrastructure",
        apply: steps::lost_attempts,
    },
    Migration {
        version: 6,
        what: "GPUs and named resources",
        apply: steps::resources,
    },
    Migration {
        version: 7,
        what: "removal of pilot directories",
        apply: steps::pilot_dir_retention,
    },
    Migration {
        version: 8,
        what: "multi-node pilots",
        apply: steps::multi_node_pilots,
    },
    Migration {
        version: 9,
        what: "the order tasks ended in",
        apply: steps::task_end_order,
    },
    Migration {
        version: 10,
        what: "parallel tasks",
        apply: steps::parallel_runs,
    },
    Migration {
        version: 11,
        what: "application variants",
        apply: steps::variants,
    },
    Migration {
        version: 12,
        what: "device co-runners",
        apply: steps::device_co_runners,
    },
    Migration {
        version: 13,
        what: "agent registration keys",
        apply: steps::registration_keys,
    },
];

/// The last version made before the schema recorded its version: a database of version 0
/// may hold any of the steps up to it, and none after.
#[cfg(test)]
pub(crate) const LAST_UNVERSIONED: i64 = 8;

/// The schema version this build writes, and the newest it opens.
pub const NEWEST: i64 = MIGRATIONS[MIGRATIONS.len() - 1].version;

/// Why a database's schema cannot be brought to this build's version.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "it has schema version {found}, written by a newer hetpilot; this build opens \
         schema versions 0 (before versions were recorded) to {NEWEST}: run the hetpilot \
         release that wrote it, or restore a backup of the data directory taken before the \
         upgrade"
    )]
    Newer { found: i64 },
    #[error(
        "it has schema version {found}, which no hetpilot writes; restore the database \
         from a backup of the data directory"
    )]
    Invalid { found: i64 },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// The version recorded in the database.
pub fn stored_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// Refuses a database of a version this build does not know, before anything is written.
pub fn refuse_unknown(conn: &Connection) -> Result<i64, SchemaError> {
    match stored_version(conn)? {
        found if found < 0 => Err(SchemaError::Invalid { found }),
        found if found > NEWEST => Err(SchemaError::Newer { found }),
        found => Ok(found),
    }
}

/// Applies every migration after the database's version, each in its own transaction.
/// The version is read again under the write lock, so two processes opening the same
/// file never apply a step twice.
pub fn migrate(conn: &mut Connection) -> Result<(), SchemaError> {
    let from = refuse_unknown(conn)?;
    if from == NEWEST {
        return Ok(());
    }
    for m in MIGRATIONS {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if refuse_unknown(&tx)? >= m.version {
            continue;
        }
        (m.apply)(&tx)?;
        tx.pragma_update(None, "user_version", m.version)?;
        tx.commit()?;
        tracing::debug!(
            version = m.version,
            what = m.what,
            "schema migration applied"
        );
    }
    tracing::info!(from, to = NEWEST, "database schema upgraded");
    Ok(())
}

/// A database at `path` built by the migrations up to `version` and recording it: one
/// an earlier release wrote, for tests of the steps after it.
#[cfg(test)]
pub(crate) fn built_to(path: &std::path::Path, version: i64) -> Connection {
    let conn = Connection::open(path).expect("opening a test database");
    for m in MIGRATIONS.iter().take_while(|m| m.version <= version) {
        (m.apply)(&conn).expect("a migration");
    }
    conn.pragma_update(None, "user_version", version)
        .expect("recording the version");
    conn
}

#[cfg(test)]
mod tests;
