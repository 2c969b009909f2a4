//! Upgrades: today's manager opens the data directories that earlier commits of this
//! repository wrote (tests/fixtures/data-dirs/COMMIT, made by `make.sh` there with those
//! commits' binaries) and shows every application, task, attempt, agent and pilot as the
//! manager that wrote them did; the upgraded database has the columns of a new one; and a
//! database of a newer schema version than this build knows is refused with one line.

use hetpilot_e2e::{array_app, bin, poll_until, Manager};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

/// The fixture data directories, oldest commit's name first (by name: each is a commit).
fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/data-dirs");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("hetpilot.db").is_file())
        .collect();
    found.sort();
    found
}

/// A private copy of `fixture`'s data directory in `dir` (the fixture itself stays as
/// checked in).
fn copy_data_dir(fixture: &Path, dir: &Path) {
    for file in ["hetpilot.db", "admin.token"] {
        let to = dir.join(file);
        std::fs::copy(fixture.join(file), &to).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

fn expected(fixture: &Path, name: &str) -> Value {
    let path = fixture.join("expected").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Fields that change on their own while a manager runs.
const CHANGING: [&str; 1] = ["last_seen_ms"];

/// Every field of `want` is in `got` with the same value: objects key by key, arrays
/// element by element (a field today's manager added is not in `want` and is not compared).
fn assert_shows(got: &Value, want: &Value, at: &str) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (key, value) in w {
                if CHANGING.contains(&key.as_str()) {
                    continue;
                }
                let field = g
                    .get(key)
                    .unwrap_or_else(|| panic!("{at}.{key} is missing from {got}"));
                // Array tasks showed an empty input before they showed their value (derived
                // from the application's array, not stored; these arrays start at 0).
                let shown = field.as_str().and_then(|v| v.parse::<u64>().ok());
                if key == "input" && value == "" && shown == g["task"]["index"].as_u64() {
                    continue;
                }
                assert_shows(field, value, &format!("{at}.{key}"));
            }
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{at}: {got} vs {want}");
            for (i, (g, w)) in g.iter().zip(w).enumerate() {
                assert_shows(g, w, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(got, want, "{at}"),
    }
}

fn get(m: &Manager, path: &str, token: &str) -> Value {
    let (status, body) = m.http().get(path, token);
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// A column: its table, name, declared type, NOT NULL and default.
type Column = (String, String, String, bool, Option<String>);

/// Each table's columns, sorted, and the schema version.
fn schema_of(db: &rusqlite::Connection) -> (i64, Vec<Column>) {
    let version = db
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let mut columns: Vec<_> = db
        .prepare(
            "SELECT m.name, c.name, c.type, c.\"notnull\", c.dflt_value
             FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table'",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    columns.sort();
    (version, columns)
}

#[test]
fn data_directories_of_earlier_commits_show_every_application_task_agent_and_pilot() {
    let fixtures = fixtures();
    assert!(fixtures.len() >= 2, "fixtures: {fixtures:?}");
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = Manager::start(fresh_dir.path(), 30.0);
    let new_schema = schema_of(&fresh.db());
    drop(fresh);
    for fixture in &fixtures {
        let name = fixture.file_name().unwrap().to_string_lossy().to_string();
        let dir = tempfile::tempdir().unwrap();
        copy_data_dir(fixture, dir.path());
        let m = Manager::start(dir.path(), 30.0);
        let apps = expected(fixture, "apps.json");
        assert_shows(
            &get(&m, "/v1/apps", &m.admin),
            &apps,
            &format!("{name} apps"),
        );
        let mut tasks = Vec::new();
        for app in apps.as_array().unwrap() {
            let id = app["app"].as_u64().unwrap();
            let listing = expected(fixture, &format!("tasks-{id}.json"));
            let at = format!("{name} app {id} tasks");
            assert_shows(
                &get(&m, &format!("/v1/apps/{id}/tasks"), &m.admin),
                &listing,
                &at,
            );
            for task in listing.as_array().unwrap() {
                let t = format!("{}.{}", task["task"]["app"], task["task"]["index"]);
                let detail = expected(fixture, &format!("task-{t}.json"));
                assert_shows(
                    &get(&m, &format!("/v1/tasks/{t}"), &m.admin),
                    &detail,
                    &format!("{name} task {t}"),
                );
                tasks.push(detail);
            }
        }
        let agents = expected(fixture, "agents.json");
        assert_shows(
            &get(&m, "/v1/agents", &m.admin),
            &agents,
            &format!("{name} agents"),
        );
        let pilots = expected(fixture, "pilots.json");
        assert_shows(
            &get(&m, "/v1/pilots", &m.admin),
            &pilots,
            &format!("{name} pilots"),
        );
        // The fixture holds what this test is about: a task that failed with its exit code,
        // one cancelled while it ran, successes, agents and a pilot that registered one.
        let has = |state: &str, exit: Option<i64>| {
            tasks
                .iter()
                .any(|t| t["state"] == state && exit.is_none_or(|c| t["last"]["exit_code"] == c))
        };
        assert!(
            has("done", Some(0)) && has("failed", Some(3)) && has("cancelled", None),
            "{name}: {tasks:?}"
        );
        assert!(agents.as_array().unwrap().len() >= 2, "{name}: {agents}");
        assert!(
            pilots
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["agent"].is_u64()),
            "{name}: {pilots}"
        );
        // Users' tokens still work: alice sees her own applications only.
        let alice = std::fs::read_to_string(fixture.join("alice.token")).unwrap();
        let hers = get(&m, "/v1/apps", alice.trim());
        let owned = |v: &Value| {
            v.as_array()
                .unwrap()
                .iter()
                .filter(|a| a["owner"] == "alice")
                .count()
        };
        assert!(
            owned(&hers) >= 1 && owned(&hers) == hers.as_array().unwrap().len(),
            "{name}: {hers}"
        );
        assert_eq!(owned(&hers), owned(&apps), "{name}");
        // The CLI reads them too.
        let failed_app =
            tasks.iter().find(|t| t["state"] == "failed").unwrap()["task"]["app"].to_string();
        let out = m.cli(&["tasks", &failed_app]);
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && shown.contains("failed"),
            "{name}: {out:?}"
        );
        // The upgraded database is the new schema, and new work runs on it with new ids.
        assert_eq!(schema_of(&m.db()), new_schema, "{name}");
        let _agent = m.agent("local", 1, &[]);
        let newest = apps
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["app"].as_u64())
            .max()
            .unwrap();
        let app = m.submit(array_app("after-upgrade", "true", 2));
        assert!(app > newest, "{name}: new id {app} after {newest}");
        assert_eq!(m.wait_finished(app, LONG)["counts"]["done"], 2, "{name}");
    }
}

#[test]
fn a_data_directory_of_a_newer_schema_is_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let (version, _) = schema_of(&m.db());
    drop(m);
    let newer = version + 1;
    let db = dir.path().join("hetpilot.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    let log = dir.path().join("serve.log");
    let mut serve = std::process::Command::new(bin("hetpilot"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("HETPILOT_CONFIG")
        .env("RUST_LOG", "off")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let status = poll_until(LONG, || serve.try_wait().unwrap());
    let _ = serve.kill();
    let _ = serve.wait();
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(1),
        "serve went on: {err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(&db.display().to_string())
            && err.contains(&format!(
                "schema version {newer}, written by a newer hetpilot"
            ))
            && err.contains(&format!(
                "schema versions 0 (before versions were recorded) to {version}"
            ))
            && err.contains("restore a backup"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the database was written to"
    );
}

#[test]
fn a_task_state_code_no_release_wrote_skips_its_application_instead_of_running_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Manager::start(dir.path(), 30.0);
    let runs = dir.path().join("runs");
    let app = m.submit(array_app(
        "ran-once",
        &format!("sh -c 'echo run >> {}'", runs.display()),
        1,
    ));
    let mut agent = m.agent("local", 1, &[]);
    assert_eq!(m.wait_finished(app, LONG)["counts"]["done"], 1);
    m.kill();
    let _ = agent.child.kill();
    let _ = agent.child.wait();
    let changed = rusqlite::Connection::open(dir.path().join("hetpilot.db"))
        .unwrap()
        .execute(
            "UPDATE tasks SET state = 99 WHERE app_id = ?1",
            [app as i64],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 1, &[]);
    let later = m.submit(array_app("later", "true", 1));
    assert_eq!(m.wait_finished(later, LONG)["counts"]["done"], 1);
    // The task was not taken for a waiting one and run again: its application is left
    // out, with an ERROR line naming the row.
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 1);
    let (status, body) = m.http().get(&format!("/v1/apps/{app}"), &m.admin);
    assert_eq!(status, 404, "{body}");
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    assert!(
        log.lines().any(|l| l.contains("ERROR")
            && l.contains(&format!("apps row {app}"))
            && l.contains("state code 99")),
        "{log}"
    );
}

#[test]
fn a_backup_of_a_newer_schema_is_not_restored_over_a_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let m = Manager::start(&data, 30.0);
    let (version, _) = schema_of(&m.db());
    drop(m);
    let backup = dir.path().join("newer-backup.db");
    rusqlite::Connection::open(data.join("hetpilot.db"))
        .unwrap()
        .execute("VACUUM INTO ?1", [backup.to_str().unwrap()])
        .unwrap();
    let newer = version + 1;
    rusqlite::Connection::open(&backup)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    let before = std::fs::read(data.join("hetpilot.db")).unwrap();
    let out = std::process::Command::new(bin("hetpilot"))
        .args(["restore", "--data-dir"])
        .arg(&data)
        .arg(&backup)
        .env_remove("HETPILOT_CONFIG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("refused, nothing was changed")
            && err.contains(&backup.display().to_string())
            && err.contains(&format!(
                "schema version {newer}, written by a newer hetpilot"
            )),
        "{err}"
    );
    assert_eq!(std::fs::read(data.join("hetpilot.db")).unwrap(), before);
    let aside = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("before-restore"))
        .count();
    assert_eq!(aside, 0, "nothing was kept aside");
}
