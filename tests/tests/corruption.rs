//! Damaged files in the data directory, through the real binaries: each file a manager
//! keeps (the database, the self-signed TLS certificate, its key and the fingerprint
//! recorded when it was last served, the admin token) is
//! flipped, truncated or emptied in a copy of a used data directory, and `hetpilot serve`
//! must refuse to start with exit status 1 and one line on stderr naming the file and
//! saying to restore it from a backup; no panic, no backtrace, and the damaged file is left
//! as it was (nothing is silently used or replaced). The undamaged copy still starts.

use hetpilot_e2e::{bin, free_port, signal, wait_until, Manager};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How a copy of the data directory is damaged.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// 16 bytes inverted at this fraction of the file's length.
    Flip(f64),
    /// The first 16 bytes of the database page holding this fraction of the file inverted:
    /// its page header (the file header on page 1), which every read of the page uses. (A
    /// flip anywhere in a page can land in its unused middle, which no check sees and
    /// nothing reads: harmless, so not a case.)
    FlipPage(f64),
    /// One letter or digit, from this fraction of the file's length on, changed by one bit
    /// into another: the file still parses (a PEM file's base64 stays base64), its
    /// contents differ.
    Letter(f64),
    /// Cut to half its length.
    Truncate,
    /// Cut to nothing.
    Empty,
    /// Removed.
    Remove,
}

fn damage(path: &Path, how: Damage) {
    let mut bytes = std::fs::read(path).unwrap();
    match how {
        Damage::Flip(at) => {
            let start = ((bytes.len() as f64 * at) as usize).min(bytes.len() - 16);
            for b in &mut bytes[start..start + 16] {
                *b ^= 0xff;
            }
        }
        Damage::FlipPage(at) => {
            const PAGE: usize = 4096;
            let start = ((bytes.len() as f64 * at) as usize / PAGE * PAGE).min(bytes.len() - 16);
            for b in &mut bytes[start..start + 16] {
                *b ^= 0xff;
            }
        }
        Damage::Letter(at) => {
            let start = (bytes.len() as f64 * at) as usize;
            let i = (start..bytes.len())
                .find(|&i| {
                    bytes[i].is_ascii_alphanumeric() && (bytes[i] ^ 1).is_ascii_alphanumeric()
                })
                .expect("a letter to change");
            bytes[i] ^= 1;
        }
        Damage::Truncate => bytes.truncate(bytes.len() / 2),
        Damage::Empty => bytes.clear(),
        Damage::Remove => return std::fs::remove_file(path).unwrap(),
    }
    std::fs::write(path, bytes).unwrap();
}

/// A data directory a TLS manager has used (an application of 2,000 tasks makes the
/// database a few dozen pages), stopped cleanly and checkpointed so the database is whole
/// in its main file.
fn used_data_dir(parent: &Path) -> PathBuf {
    let dir = parent.join("used");
    std::fs::create_dir(&dir).unwrap();
    let m = Manager::start_with(&dir, free_port(), 5.0, &["--tls", "self-signed"], &[]);
    m.submit(json!({"name": "many", "command": "true",
                    "tasks": {"array": {"start": 0, "end": 1999}}}));
    m.create_user("alice");
    signal(&m.child, libc::SIGTERM);
    drop(m);
    let db = rusqlite::Connection::open(dir.join("hetpilot.db")).unwrap();
    db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(db);
    for f in [
        "manager.url",
        "manager.log",
        "hetpilot.db-wal",
        "hetpilot.db-shm",
    ] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// What `hetpilot serve` did with a data directory.
enum Served {
    /// It listened (and was stopped); its stderr.
    Started(String),
    /// It ended by itself: exit status and stderr.
    Refused(Option<i32>, String),
}

fn serve(dir: &Path, flags: &[&str]) -> Served {
    let url_file = dir.join("manager.url");
    let _ = std::fs::remove_file(&url_file);
    let stderr_path = dir.with_extension("stderr");
    let mut child = Command::new(bin("hetpilot"))
        .args(["serve", "--listen", "127.0.0.1:0", "--tls", "self-signed"])
        .arg("--data-dir")
        .arg(dir)
        .args(flags)
        .env_remove("HETPILOT_CONFIG")
        .env_remove("RUST_LOG")
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let exited = wait_until(
        "the manager to listen or end",
        Duration::from_secs(30),
        || {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(Some(status));
            }
            url_file.exists().then_some(None)
        },
    );
    if exited.is_none() {
        signal(&child, libc::SIGTERM);
        child.wait().unwrap();
    }
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    match exited {
        Some(status) => Served::Refused(status.code(), stderr),
        None => Served::Started(stderr),
    }
}

/// Damages `file` in a copy of `used` and checks that the manager refuses it as it must.
fn refused(used: &Path, parent: &Path, file: &str, how: Damage) -> Result<(), String> {
    let copy = parent.join(format!("{file}-{how:?}").replace(['(', ')', '.'], "_"));
    copy_dir(used, &copy);
    let path = copy.join(file);
    damage(&path, how);
    let damaged = std::fs::read(&path).ok();
    let case = format!("{file} {how:?}");
    match serve(&copy, &[]) {
        Served::Started(stderr) => Err(format!(
            "{case}: the manager started on it (stderr: {stderr:?})"
        )),
        Served::Refused(status, stderr) => {
            let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            let line = lines.first().copied().unwrap_or("");
            let mut wrong = Vec::new();
            if status != Some(1) {
                wrong.push(format!("exit status {status:?}, not 1"));
            }
            if lines.len() != 1 {
                wrong.push(format!("{} lines on stderr, not 1", lines.len()));
            }
            if stderr.contains("panicked") || stderr.contains("backtrace") {
                wrong.push("a panic".into());
            }
            if !line.starts_with("error: ") || !line.contains(&path.display().to_string()) {
                wrong.push("the line does not name the file".into());
            }
            if !line.contains("restore") || !line.contains("backup") {
                wrong.push("the line does not say to restore it from a backup".into());
            }
            if std::fs::read(&path).ok() != damaged {
                wrong.push("the damaged file was rewritten".into());
            }
            match wrong.is_empty() {
                true => Ok(()),
                false => Err(format!("{case}: {} (stderr: {stderr:?})", wrong.join(", "))),
            }
        }
    }
}

fn check_all(file: &str, damages: &[Damage]) {
    let parent = tempfile::tempdir().unwrap();
    let used = used_data_dir(parent.path());
    let whole = parent.path().join("whole");
    copy_dir(&used, &whole);
    match serve(&whole, &[]) {
        Served::Started(_) => {}
        Served::Refused(status, stderr) => {
            panic!("an undamaged data directory was refused ({status:?}): {stderr}")
        }
    }
    let failures: Vec<String> = damages
        .iter()
        .filter_map(|how| refused(&used, parent.path(), file, *how).err())
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn a_damaged_database_stops_start_up_with_one_line() {
    check_all(
        "hetpilot.db",
        &[
            Damage::FlipPage(0.0),
            Damage::FlipPage(0.5),
            Damage::FlipPage(0.9),
            Damage::Truncate,
            Damage::Empty,
        ],
    );
}

#[test]
fn a_damaged_tls_key_stops_start_up_and_is_not_replaced() {
    check_all(
        "tls-key.pem",
        &[
            Damage::Flip(0.5),
            Damage::Letter(0.3),
            Damage::Letter(0.6),
            Damage::Truncate,
            Damage::Empty,
            Damage::Remove,
        ],
    );
}

#[test]
fn a_damaged_tls_certificate_stops_start_up_and_is_not_replaced() {
    check_all(
        "tls-cert.pem",
        &[
            Damage::Flip(0.5),
            Damage::Letter(0.5),
            Damage::Letter(0.85),
            Damage::Flip(0.9),
            Damage::Truncate,
            Damage::Empty,
            Damage::Remove,
        ],
    );
}

#[test]
fn a_damaged_tls_fingerprint_record_stops_start_up() {
    check_all(
        "tls.fingerprint",
        &[Damage::Letter(0.5), Damage::Truncate, Damage::Empty],
    );
}

#[test]
fn a_damaged_admin_token_stops_start_up() {
    check_all(
        "admin.token",
        &[
            Damage::Flip(0.5),
            Damage::Letter(0.5),
            Damage::Truncate,
            Damage::Empty,
        ],
    );
}

/// An index that disagrees with its table: every page is sound, so the quick check at
/// every start passes it, and `--full-check` (SQLite's `integrity_check`) refuses it.
#[test]
fn full_check_finds_an_index_that_disagrees_with_its_table() {
    let parent = tempfile::tempdir().unwrap();
    let dir = used_data_dir(parent.path());
    let db = dir.join("hetpilot.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    // The index on apps(owner) declared on apps(name) instead, without rebuilding it.
    conn.execute_batch(
        "PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = 'CREATE INDEX apps_owner ON apps(name)'
             WHERE name = 'apps_owner';
         PRAGMA writable_schema = OFF;",
    )
    .unwrap();
    drop(conn);
    let before = std::fs::read(&db).unwrap();
    match serve(&dir, &["--full-check"]) {
        Served::Started(stderr) => panic!("--full-check started on it (stderr: {stderr:?})"),
        Served::Refused(status, stderr) => {
            assert_eq!(status, Some(1), "{stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(
                stderr.starts_with(&format!("error: the database {} is damaged", db.display()))
                    && stderr.contains("apps_owner")
                    && stderr.contains("restore the file from a backup"),
                "{stderr}"
            );
        }
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the damaged file was rewritten"
    );
    match serve(&dir, &[]) {
        Served::Started(_) => {}
        Served::Refused(_, stderr) => panic!("the quick check refused sound pages: {stderr}"),
    }
}

/// A manager SIGKILLed leaves its last commits in the WAL file: that is not damage, and
/// the check (read-only) neither refuses it nor folds it into the main file.
#[test]
fn a_data_dir_left_by_a_killed_manager_still_starts() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("killed");
    std::fs::create_dir(&dir).unwrap();
    let mut m = Manager::start_with(&dir, free_port(), 5.0, &["--tls", "self-signed"], &[]);
    let app = m.submit(json!({"name": "many", "command": "true",
                              "tasks": {"array": {"start": 0, "end": 499}}}));
    m.kill();
    let wal = dir.join("hetpilot.db-wal");
    assert!(
        std::fs::metadata(&wal)
            .map(|w| w.len() > 0)
            .unwrap_or(false),
        "a killed manager left no WAL to recover from"
    );
    match serve(&dir, &["--full-check"]) {
        Served::Started(_) => {}
        Served::Refused(status, stderr) => panic!("refused after a kill ({status:?}): {stderr}"),
    }
    let db = rusqlite::Connection::open(dir.join("hetpilot.db")).unwrap();
    let tasks: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM tasks WHERE app_id = ?1",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tasks, 500);
}
