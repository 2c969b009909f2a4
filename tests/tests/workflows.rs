//! Workflow (DAG) applications through the real manager and agents: dependency order
//! across a manager SIGKILL, failures cancelling descendants with the reason, bad
//! workflows refused with nothing stored, and emulated replay of a WfCommons instance
//! with its files staged through the file service.

use hetpilot_e2e::{wait_until, Manager};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// `hetpilot tasks APP --json` for every task, by name.
fn tasks_by_name(m: &Manager, app: u64) -> HashMap<String, Value> {
    let out = m.cli(&["tasks", &app.to_string(), "--json", "--limit", "100000"]);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.into_iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t))
        .collect()
}

/// Submits a workflow application file through the CLI; returns the application id.
fn submit_file(m: &Manager, file: &Path, extra: &[&str]) -> u64 {
    let mut args = vec!["submit", file.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = m.cli(&args);
    assert!(out.status.success(), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    answer["app"].as_u64().unwrap()
}

/// Layer `l` of `LAYERS` has `WIDTH` tasks; task (l, i) depends on (l-1, i) and
/// (l-1, (i+1) % WIDTH) (and layer 0 on nothing): every layer waits on the last.
const LAYERS: usize = 6;
const WIDTH: usize = 12;

fn layered_file(dir: &Path) -> std::path::PathBuf {
    let mut text = String::from("name = \"layers\"\nmax_attempts = 3\n");
    for l in 0..LAYERS {
        for i in 0..WIDTH {
            text += &format!("[[task]]\nid = \"t{l}-{i}\"\ncommand = \"sleep 0.15\"\n");
            if l > 0 {
                text += &format!(
                    "after = [\"t{}-{i}\", \"t{}-{}\"]\n",
                    l - 1,
                    l - 1,
                    (i + 1) % WIDTH
                );
            }
        }
    }
    let path = dir.join("layers.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// One stored attempt: task index, started and ended (manager ms), outcome.
type AttemptRow = (usize, Option<i64>, Option<i64>, Option<String>);

fn count(m: &Manager, sql: &str, app: u64) -> i64 {
    m.db().query_row(sql, [app as i64], |r| r.get(0)).unwrap()
}

#[test]
fn a_workflow_runs_in_dependency_order_through_a_manager_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Manager::start(dir.path(), 10.0);
    let port = m.port;
    let _a1 = m.agent("local", 4, &[]);
    let _a2 = m.agent("local", 4, &[]);
    let app = submit_file(&m, &layered_file(dir.path()), &[]);
    let n = (LAYERS * WIDTH) as i64;
    wait_until("two layers to finish", Duration::from_secs(120), || {
        let done = count(
            &m,
            "SELECT COUNT(*) FROM tasks WHERE app_id = ?1 AND state = 3",
            app,
        );
        (done >= 2 * WIDTH as i64).then_some(())
    });
    m.kill();
    let done_at_kill = count(
        &m,
        "SELECT COUNT(*) FROM tasks WHERE app_id = ?1 AND state = 3",
        app,
    );
    assert!(done_at_kill < n, "the kill came mid-workflow");
    let m = Manager::start_on(dir.path(), port, 10.0, &[]);
    let summary = m.wait_finished(app, Duration::from_secs(300));
    assert_eq!(summary["counts"]["done"], n, "none lost: {summary}");
    let tasks = tasks_by_name(&m, app);
    assert_eq!(tasks.len() as i64, n);
    let mut checked = 0;
    for (name, t) in &tasks {
        assert_eq!(t["state"], "done", "{name}: {t}");
        let started = t["started_ms"].as_u64().unwrap();
        for p in t["parents"].as_array().unwrap() {
            let parent = &tasks[p.as_str().unwrap()];
            let ended = parent["ended_ms"].as_u64().unwrap();
            assert!(
                ended <= started,
                "{name} started at {started} before its parent {p} ended at {ended}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * (LAYERS - 1) * WIDTH);
    // Every run of a child (not only the last) began after its parents' successes, in
    // the manager's own records (task index = l * WIDTH + i, the file's order).
    let conn = m.db();
    let mut stmt = conn
        .prepare("SELECT idx, started_ms, ended_ms, outcome FROM attempts WHERE app_id = ?1")
        .unwrap();
    let rows: Vec<AttemptRow> = stmt
        .query_map([app as i64], |r| {
            let idx: i64 = r.get(0)?;
            Ok((idx as usize, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut success_end = HashMap::new();
    for (idx, _, ended, outcome) in &rows {
        if outcome.as_deref() == Some("success") {
            success_end.insert(*idx, ended.unwrap());
        }
    }
    let mut runs_checked = 0;
    for (idx, started, _, _) in &rows {
        let (l, i) = (idx / WIDTH, idx % WIDTH);
        let Some(started) = started.filter(|_| l > 0) else {
            continue;
        };
        for p in [(l - 1) * WIDTH + i, (l - 1) * WIDTH + (i + 1) % WIDTH] {
            assert!(
                started >= success_end[&p],
                "task {idx} started at {started}, before its parent {p} succeeded"
            );
        }
        runs_checked += 1;
    }
    assert!(runs_checked >= (LAYERS - 1) * WIDTH - 8, "{runs_checked}");
    let status = m.cli(&["status", &app.to_string()]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains(&format!("workflow {app}: blocked 0, ready 0")),
        "{text}"
    );
}

#[test]
fn a_failed_task_cancels_its_descendants_with_the_reason_and_replays_from_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let mut m = Manager::start_with(
        dir.path(),
        hetpilot_e2e::free_port(),
        10.0,
        &["--journal", journal.to_str().unwrap()],
        &[],
    );
    let _agent = m.agent("local", 4, &[]);
    let file = dir.path().join("fail.toml");
    std::fs::write(
        &file,
        "max_attempts = 2\n\
         [[task]]\nid = \"a\"\ncommand = \"true\"\n\
         [[task]]\nid = \"b\"\ncommand = \"false\"\nafter = [\"a\"]\n\
         [[task]]\nid = \"c\"\ncommand = \"true\"\nafter = [\"b\"]\n\
         [[task]]\nid = \"d\"\ncommand = \"true\"\nafter = [\"c\", \"a\"]\n\
         [[task]]\nid = \"e\"\ncommand = \"true\"\nafter = [\"a\"]\n",
    )
    .unwrap();
    let app = submit_file(&m, &file, &[]);
    let summary = m.wait_finished(app, Duration::from_secs(120));
    assert_eq!(summary["counts"]["failed"], 1, "{summary}");
    let tasks = tasks_by_name(&m, app);
    assert_eq!(tasks["b"]["state"], "failed");
    assert_eq!(tasks["b"]["attempts"], 2, "retried before failing for good");
    for name in ["c", "d"] {
        assert_eq!(tasks[name]["state"], "cancelled", "{name}");
        assert_eq!(
            tasks[name]["cancelled_because"], "its ancestor `b` failed",
            "{name}: {}",
            tasks[name]
        );
        assert!(tasks[name]["started_ms"].is_null(), "{name} never ran");
    }
    assert_eq!(tasks["e"]["state"], "done");
    assert_eq!(tasks["a"]["state"], "done");
    // The journal replays through a fresh control plane, decision for decision: the
    // dependencies live in the spec and the task states, nowhere else.
    m.kill();
    let out = std::process::Command::new(hetpilot_e2e::bin("hetpilot"))
        .args([
            "simulate",
            "live",
            "--json",
            "--replay",
            journal.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let replayed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(replayed["identical"], true, "{replayed}");
    assert!(
        replayed["leased_tasks"].as_u64().unwrap() >= 4,
        "{replayed}"
    );
}

#[test]
fn bad_workflows_are_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 10.0);
    let cases = [
        (
            "cycle.toml",
            "[[task]]\nid = \"x\"\ncommand = \"true\"\nafter = [\"z\"]\n\
             [[task]]\nid = \"y\"\ncommand = \"true\"\nafter = [\"x\"]\n\
             [[task]]\nid = \"z\"\ncommand = \"true\"\nafter = [\"y\"]\n",
            "cycle: ",
        ),
        (
            "missing.toml",
            "[[task]]\nid = \"x\"\ncommand = \"true\"\nafter = [\"ghost\"]\n",
            "parent `ghost` is not a task",
        ),
        (
            "dup.toml",
            "[[task]]\nid = \"x\"\ncommand = \"true\"\n[[task]]\nid = \"x\"\ncommand = \"true\"\n",
            "two tasks have the id `x`",
        ),
        (
            "twice.toml",
            "[[task]]\nid = \"x\"\ncommand = \"true\"\noutputs = [\"f\"]\n\
             [[task]]\nid = \"y\"\ncommand = \"true\"\noutputs = [\"f\"]\n",
            "produced by both `x` and `y`",
        ),
    ];
    for (name, text, expected) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let out = m.cli(&["submit", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name} was accepted");
        assert!(err.contains(expected), "{name}: {err}");
    }
    let version = dir.path().join("old.json");
    std::fs::write(
        &version,
        r#"{"schemaVersion": "1.2", "workflow": {"jobs": []}}"#,
    )
    .unwrap();
    let out = m.cli(&["submit", "--wfcommons", version.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("schemaVersion `1.2` is not supported"));
    // The manager refuses a hostile DAG sent past the CLI too: a cycle in raw JSON.
    let (status, body) = m.http().post(
        "/v1/apps",
        &m.admin,
        &serde_json::json!({
            "name": "raw", "command": "true",
            "tasks": {"lines": ["p", "q"]},
            "dag": {"tasks": [{"parents": [1]}, {"parents": [0]}]}
        }),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string().contains("p -> q -> p") || body.to_string().contains("q -> p -> q"),
        "{body}"
    );
    let (status, body) = m.http().post(
        "/v1/apps",
        &m.admin,
        &serde_json::json!({
            "name": "raw", "command": "true",
            "tasks": {"lines": ["p"]},
            "dag": {"tasks": [{"parents": [4000000000u64]}]}
        }),
    );
    assert_eq!(status, 400, "{body}");
    let apps: i64 = m
        .db()
        .query_row("SELECT COUNT(*) FROM apps", [], |r| r.get(0))
        .unwrap();
    assert_eq!(apps, 0, "nothing stored");
}

#[test]
fn an_emulated_wfcommons_instance_replays_with_its_files_staged() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 10.0);
    let _a1 = m.agent("local", 4, &[]);
    let _a2 = m.agent("local", 4, &[]);
    let instance = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples/workflows/blast-chameleon-small-001.json");
    let out = m.cli(&[
        "submit",
        "--wfcommons",
        instance.to_str().unwrap(),
        "--emulate",
        "--time-scale",
        "0.02",
        "--size-scale",
        "0.001",
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let app = serde_json::from_slice::<Value>(&out.stdout).unwrap()["app"]
        .as_u64()
        .unwrap();
    let summary = m.wait_finished(app, Duration::from_secs(300));
    assert_eq!(summary["counts"]["done"], 43, "{summary}");
    let tasks = tasks_by_name(&m, app);
    let split = &tasks["split_fasta_ID000001"];
    for (name, t) in &tasks {
        if name.starts_with("blastall") {
            assert!(
                t["started_ms"].as_u64() >= split["ended_ms"].as_u64(),
                "{name}"
            );
            // The recorded 9.8 s × 0.02 of CPU, at least.
            let wall = t["last"]["measurements"]["wall_ms"].as_f64().unwrap();
            assert!(wall >= 100.0, "{name}: {wall} ms");
        }
    }
    // split_fasta's outputs (small.fasta.N) went through the file service and were read
    // by the blastall tasks (their staging fetched or found them), with the external nt
    // database (5,112,425,635 B × 0.001), created once at submit.
    let files = dir.path().join("files");
    let named = |name: &str| -> Vec<_> {
        walk(&files)
            .into_iter()
            .filter(|p| p.file_name().unwrap().to_string_lossy() == name)
            .collect()
    };
    assert_eq!(named("small.fasta.0").len(), 1);
    let nt = named("nt");
    assert_eq!(nt.len(), 1, "{nt:?}");
    assert_eq!(std::fs::metadata(&nt[0]).unwrap().len(), 5_112_425);
    // The emulator read them in full on the agent (its stdout, on this host): its
    // program (7,688 B × 0.001), its query (6 B × 0.001) and nt.
    let out = tasks["blastall_ID000002"]["last"]["stdout_path"]
        .as_str()
        .unwrap();
    let said = std::fs::read_to_string(out).unwrap();
    assert!(said.contains("read 5112432 B from 3 files"), "{said}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_stored_workflow_that_no_longer_fits_is_skipped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Manager::start(dir.path(), 10.0);
    let port = m.port;
    let file = dir.path().join("two.toml");
    std::fs::write(
        &file,
        "[[task]]\nid = \"a\"\ncommand = \"true\"\n[[task]]\nid = \"b\"\ncommand = \"true\"\nafter = [\"a\"]\n",
    )
    .unwrap();
    let good = submit_file(&m, &file, &[]);
    let bad = submit_file(&m, &file, &[]);
    m.kill();
    {
        // A cycle and an out-of-range parent, written past every check at the edge.
        let db = rusqlite::Connection::open(dir.path().join("hetpilot.db")).unwrap();
        let spec: String = db
            .query_row("SELECT spec FROM apps WHERE id = ?1", [bad as i64], |r| {
                r.get(0)
            })
            .unwrap();
        let mut spec: Value = serde_json::from_str(&spec).unwrap();
        spec["dag"]["tasks"][0]["parents"] = serde_json::json!([1, 99]);
        db.execute(
            "UPDATE apps SET spec = ?1 WHERE id = ?2",
            rusqlite::params![spec.to_string(), bad as i64],
        )
        .unwrap();
    }
    let m = Manager::start_on(dir.path(), port, 10.0, &[]);
    let (s, apps) = m.http().get("/v1/apps", &m.admin);
    assert_eq!(s, 200);
    let ids: Vec<u64> = apps
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["app"].as_u64().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![good],
        "the good workflow is back, the broken one is not"
    );
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    assert!(log.contains(&format!("apps row {bad}")), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    let _agent = m.agent("local", 2, &[]);
    let summary = m.wait_finished(good, Duration::from_secs(60));
    assert_eq!(summary["counts"]["done"], 2, "{summary}");
}
