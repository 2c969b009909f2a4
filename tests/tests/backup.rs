//! `hetpilot backup` and `hetpilot restore` through the real binaries: a backup taken while
//! a local agent works through a stream of short tasks restores into a fresh data directory
//! with every task the manager had acknowledged as done before the backup began, still done,
//! and the restored manager serves; a restore is refused while a manager runs on the
//! directory, and a garbage or truncated file is refused with the data left untouched,
//! while a sound one replaces it and the replaced database is kept aside.

use hetpilot_e2e::{array_app, bin, wait_until, Manager};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

/// Runs `hetpilot ARGS`, outside any manager's environment.
fn hetpilot(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(bin("hetpilot"))
        .args(args)
        .args(paths)
        .env_remove("HETPILOT_CONFIG")
        .env_remove("HETPILOT_DATA_DIR")
        .output()
        .expect("running the hetpilot CLI")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every task of `app` in state `state`, by task, with its attempt count.
fn tasks_in(m: &Manager, app: u64, state: &str) -> BTreeMap<String, u64> {
    let (s, b) = m.http().get(
        &format!("/v1/apps/{app}/tasks?state={state}&limit=100000"),
        &m.admin,
    );
    assert_eq!(s, 200, "{b}");
    b.as_array()
        .unwrap()
        .iter()
        .map(|t| (t["task"].to_string(), t["attempts"].as_u64().unwrap()))
        .collect()
}

fn counts(m: &Manager, app: u64) -> Value {
    let (s, b) = m.http().get(&format!("/v1/apps/{app}"), &m.admin);
    assert_eq!(s, 200, "{b}");
    b["counts"].clone()
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_backup_taken_under_load_restores_every_task_acknowledged_before_it() {
    let live = tempfile::tempdir().unwrap();
    let mut m = Manager::start(live.path(), 5.0);
    let _agent = m.agent("local", 4, &[]);
    let app = m.submit(array_app("stream", "/bin/sleep 0.2", 200));
    wait_until("twenty tasks done", LONG, || {
        (counts(&m, app)["done"].as_u64().unwrap_or(0) >= 20).then_some(())
    });

    // Read from the store: what the manager has acknowledged, committed.
    let acknowledged = tasks_in(&m, app, "done");
    let backup = live.path().join("backups").join("state.db");
    std::fs::create_dir(backup.parent().unwrap()).unwrap();
    let out = hetpilot(
        &["backup", "--data-dir", live.path().to_str().unwrap()],
        &[&backup],
    );
    assert!(out.status.success(), "{}", text(&out));
    let after = counts(&m, app);
    let n = |k: &str| after[k].as_u64().unwrap_or(0);
    assert!(
        n("waiting") + n("leased") + n("running") > 0,
        "the backup must be taken while tasks still run: {after}"
    );
    assert_eq!(mode(&backup), 0o600, "the backup holds users' commands");

    m.kill();
    let fresh = tempfile::tempdir().unwrap();
    let restored_dir = fresh.path().join("data");
    let out = hetpilot(
        &["restore", "--data-dir", restored_dir.to_str().unwrap()],
        &[&backup],
    );
    assert!(out.status.success(), "{}", text(&out));
    // The token's hash is in the backup; its plain text is the admin's to keep.
    std::fs::copy(
        live.path().join("admin.token"),
        restored_dir.join("admin.token"),
    )
    .unwrap();
    let restored = Manager::start(&restored_dir, 5.0);
    let done_now = tasks_in(&restored, app, "done");
    for (task, attempts) in &acknowledged {
        assert_eq!(
            done_now.get(task),
            Some(attempts),
            "task {task}, done before the backup, is not done (with the same attempts) after the restore"
        );
    }
    assert!(done_now.len() >= acknowledged.len());

    let _agent = restored.agent("local", 2, &[]);
    let probe = restored.submit(array_app("after-restore", "/bin/true", 3));
    let summary = restored.wait_finished(probe, LONG);
    assert_eq!(summary["counts"]["done"], 3, "{summary}");
}

#[test]
fn a_restore_into_a_running_managers_directory_is_refused() {
    let live = tempfile::tempdir().unwrap();
    let m = Manager::start(live.path(), 30.0);
    let app = m.submit(array_app("kept", "/bin/true", 2));
    let backup = tempfile::tempdir().unwrap();
    let file = backup.path().join("state.db");
    let out = hetpilot(
        &["backup", "--data-dir", live.path().to_str().unwrap()],
        &[&file],
    );
    assert!(out.status.success(), "{}", text(&out));

    let db = live.path().join("hetpilot.db");
    let before = std::fs::read(&db).unwrap();
    let out = hetpilot(
        &["restore", "--data-dir", live.path().to_str().unwrap()],
        &[&file],
    );
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("a manager is running on"), "{said}");
    assert!(said.contains("stop it first"), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert!(!has_kept_aside(live.path()));
    // Still the same manager, serving.
    assert_eq!(counts(&m, app)["waiting"], 2);

    // A second manager on the same directory is refused the same way.
    let second = Command::new(bin("hetpilot"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(live.path())
        .env_remove("HETPILOT_CONFIG")
        .output()
        .unwrap();
    assert!(!second.status.success(), "{}", text(&second));
    assert!(
        text(&second).contains("a manager is running on"),
        "{}",
        text(&second)
    );
}

fn has_kept_aside(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .contains("before-restore")
    })
}

#[test]
fn a_garbage_or_truncated_backup_is_refused_and_the_data_left_untouched() {
    let live = tempfile::tempdir().unwrap();
    let mut m = Manager::start(live.path(), 30.0);
    let app = m.submit(array_app("kept", "/bin/true", 2));
    let good = live.path().join("good.db");
    let out = hetpilot(
        &["backup", "--data-dir", live.path().to_str().unwrap()],
        &[&good],
    );
    assert!(out.status.success(), "{}", text(&out));
    m.kill();

    let bytes = std::fs::read(&good).unwrap();
    let garbage = live.path().join("garbage.db");
    std::fs::write(&garbage, b"this is not a database\n".repeat(400)).unwrap();
    let truncated = live.path().join("truncated.db");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    // A sound SQLite database that is not a hetpilot one.
    let foreign = live.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
        .unwrap();

    let db = live.path().join("hetpilot.db");
    let before = std::fs::read(&db).unwrap();
    let listing = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let files_before = listing(live.path());
    // Half a database reads as malformed, or as damaged by quick_check, by where it ends.
    let unsound: &[&str] = &["is not a readable SQLite database", "is damaged"];
    for (bad, expected) in [
        (&garbage, &["is not a readable SQLite database"][..]),
        (&truncated, unsound),
        (
            &foreign,
            &["is not a hetpilot database: it has no table `users`"][..],
        ),
    ] {
        let out = hetpilot(
            &["restore", "--data-dir", live.path().to_str().unwrap()],
            &[bad],
        );
        let said = text(&out);
        assert!(!out.status.success(), "{said}");
        assert!(
            expected.iter().any(|e| said.contains(e)),
            "{}: {said}",
            bad.display()
        );
        assert!(
            said.contains(bad.to_str().unwrap()),
            "names the file: {said}"
        );
        assert!(said.contains("nothing was changed"), "{said}");
        assert_eq!(std::fs::read(&db).unwrap(), before, "{}", bad.display());
        assert_eq!(listing(live.path()), files_before, "{}", bad.display());
    }

    // A device would be read without end: refused as not a file.
    let out = hetpilot(
        &["restore", "--data-dir", live.path().to_str().unwrap()],
        &[Path::new("/dev/zero")],
    );
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("/dev/zero is not a regular file"), "{said}");
    assert_eq!(listing(live.path()), files_before);

    // A sound backup is restored over the killed manager's data, which is kept aside with
    // its WAL (the restored file must never pair with the old WAL).
    let had_wal = live.path().join("hetpilot.db-wal").exists();
    let out = hetpilot(
        &["restore", "--data-dir", live.path().to_str().unwrap()],
        &[&good],
    );
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let aside: Vec<_> = std::fs::read_dir(live.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".before-restore-"))
        .collect();
    let kept = aside
        .iter()
        .find(|p| !p.to_string_lossy().ends_with("-wal") && !p.to_string_lossy().ends_with("-shm"))
        .unwrap_or_else(|| panic!("no database kept aside: {aside:?}"));
    assert!(said.contains(kept.to_str().unwrap()), "{said}");
    assert_eq!(std::fs::read(kept).unwrap(), before);
    assert!(
        !live.path().join("hetpilot.db-wal").exists(),
        "the old WAL must not stay beside the restored database"
    );
    assert_eq!(
        aside.iter().any(|p| p.to_string_lossy().ends_with("-wal")),
        had_wal
    );
    assert_eq!(std::fs::read(&db).unwrap(), bytes);

    let again = Manager::start(live.path(), 30.0);
    assert_eq!(counts(&again, app)["waiting"], 2);
}
