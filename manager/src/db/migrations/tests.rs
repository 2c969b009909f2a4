use super::*;
use crate::db::schema::open;
use std::path::Path;

/// A column: its name, declared type, NOT NULL and default.
type Column = (String, String, bool, Option<String>);

/// Every table's columns, by table name.
fn columns(conn: &Connection) -> Vec<(String, Vec<Column>)> {
    let mut tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    tables.sort();
    tables
        .into_iter()
        .map(|t| {
            let mut cols: Vec<_> = conn
                .prepare("SELECT name, type, \"notnull\", dflt_value FROM pragma_table_info(?1)")
                .unwrap()
                .query_map([&t], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            cols.sort();
            (t, cols)
        })
        .collect()
}

fn fresh(dir: &Path) -> Connection {
    open(&dir.join("fresh.db")).unwrap()
}

#[test]
fn versions_count_up_from_one_without_gaps() {
    for (i, m) in MIGRATIONS.iter().enumerate() {
        assert_eq!(m.version, i as i64 + 1, "{}", m.what);
    }
}

#[test]
fn a_new_database_is_built_by_the_migrations_and_records_the_newest_version() {
    let dir = tempfile::tempdir().unwrap();
    let conn = fresh(dir.path());
    assert_eq!(stored_version(&conn).unwrap(), NEWEST);
    let tables: Vec<String> = columns(&conn).into_iter().map(|(t, _)| t).collect();
    for t in [
        "users", "apps", "tasks", "attempts", "agents", "pilots", "counters",
    ] {
        assert!(tables.iter().any(|x| x == t), "{t} in {tables:?}");
    }
}

#[test]
fn an_unversioned_database_of_any_earlier_schema_is_upgraded_to_a_new_ones_columns() {
    let dir = tempfile::tempdir().unwrap();
    let want = columns(&fresh(dir.path()));
    // Data directories written before the schema had a version: the version 1 tables
    // only, some of the later columns, or all of them (each with version 0).
    for reached in 1..=LAST_UNVERSIONED {
        let path = dir.path().join(format!("old-{reached}.db"));
        {
            let conn = Connection::open(&path).unwrap();
            for m in MIGRATIONS.iter().take(reached as usize) {
                (m.apply)(&conn).unwrap();
            }
            conn.execute(
                "INSERT INTO users (name, token_hash, is_admin, created_ms) VALUES ('admin', 'h', 1, 5)",
                [],
            )
            .unwrap();
            assert_eq!(stored_version(&conn).unwrap(), 0);
        }
        let conn = open(&path).unwrap();
        assert_eq!(stored_version(&conn).unwrap(), NEWEST, "from {reached}");
        assert_eq!(columns(&conn), want, "from {reached}");
        let kept: i64 = conn
            .query_row(
                "SELECT created_ms FROM users WHERE name = 'admin'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kept, 5, "from {reached}");
    }
}

#[test]
fn a_database_of_a_newer_version_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE from_the_future (x INTEGER);")
            .unwrap();
        conn.pragma_update(None, "user_version", NEWEST + 1)
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = open(&path).unwrap_err();
    assert!(
        matches!(err, SchemaError::Newer { found } if found == NEWEST + 1),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("schema version {}", NEWEST + 1))
            && message.contains(&format!(
                "schema versions 0 (before versions were recorded) to {NEWEST}"
            ))
            && !message.contains('\n'),
        "{message}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file was written to"
    );
    assert!(!dir.path().join("newer.db-wal").exists());
}

#[test]
fn a_negative_version_is_refused_as_written_by_no_release() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("negative.db");
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", -3)
        .unwrap();
    let err = open(&path).unwrap_err();
    assert!(matches!(err, SchemaError::Invalid { found: -3 }), "{err:?}");
}

#[test]
fn opening_an_upgraded_database_again_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.db");
    let first = columns(&open(&path).unwrap());
    let again = open(&path).unwrap();
    assert_eq!(columns(&again), first);
    assert_eq!(stored_version(&again).unwrap(), NEWEST);
}
