//! Whether the database file is whole before anything reads it: SQLite's `quick_check` at
//! every start (every page, record and free list: one pass over the file), or the full
//! `integrity_check` on request (every index against its table as well). A damaged file is
//! refused whole; only a readable file gets the row-by-row recovery of `load`, where a row
//! that cannot be read back is skipped.

use rusqlite::{Connection, ErrorCode};

/// How thoroughly the file is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// `PRAGMA quick_check`.
    Quick,
    /// `PRAGMA integrity_check`.
    Full,
}

/// The most problems a check lists (the first one is reported).
const MAX_PROBLEMS: u32 = 5;

/// What SQLite found wrong with the file (empty when it is whole).
pub fn problems(conn: &Connection, depth: Depth) -> rusqlite::Result<Vec<String>> {
    let pragma = match depth {
        Depth::Quick => "quick_check",
        Depth::Full => "integrity_check",
    };
    let mut stmt = conn.prepare(&format!("PRAGMA {pragma}({MAX_PROBLEMS})"))?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    let found = rows.collect::<rusqlite::Result<Vec<String>>>()?;
    // A row may hold several lines, headed by the schema they are in ("*** in database
    // main ***"): one problem a line, without the heading.
    Ok(found
        .iter()
        .flat_map(|row| row.lines())
        .filter(|line| *line != "ok" && !line.starts_with("***") && !line.trim().is_empty())
        .map(str::to_string)
        .collect())
}

/// Whether `e` says the file is damaged or not a database at all (rather than, say,
/// unreadable or locked).
pub fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made(dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT);
             CREATE INDEX t_v ON t(v);",
        )
        .unwrap();
        for i in 0..2000 {
            conn.execute("INSERT INTO t VALUES (?1, ?2)", (i, format!("value {i}")))
                .unwrap();
        }
        path
    }

    #[test]
    fn a_whole_file_has_no_problems_and_a_flipped_page_has_some() {
        let dir = tempfile::tempdir().unwrap();
        let path = made(dir.path());
        for depth in [Depth::Quick, Depth::Full] {
            let conn = Connection::open(&path).unwrap();
            assert_eq!(problems(&conn, depth).unwrap(), Vec::<String>::new());
        }
        let mut bytes = std::fs::read(&path).unwrap();
        let page = 4096;
        // The header of the third page (a b-tree page of the table or its index).
        for b in &mut bytes[2 * page..2 * page + 8] {
            *b ^= 0xff;
        }
        std::fs::write(&path, &bytes).unwrap();
        let conn = Connection::open(&path).unwrap();
        let found = match problems(&conn, Depth::Quick) {
            Ok(found) => found,
            Err(e) => {
                assert!(is_damage(&e), "{e}");
                return;
            }
        };
        assert!(!found.is_empty(), "quick_check missed a flipped page");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        std::fs::write(&path, vec![0x5a; 8192]).unwrap();
        let conn = Connection::open(&path).unwrap();
        let e = problems(&conn, Depth::Quick).unwrap_err();
        assert!(is_damage(&e), "{e}");
    }
}
