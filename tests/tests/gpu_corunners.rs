//! Applications sharing a GPU by fractions are each other's device co-runners: a
//! half-GPU run of one application beside a half-GPU run of another on the same device
//! reports it, the manager profiles runtimes per device co-runner set, and `/v1/affinity`
//! and `hetpilot affinity --live` show the set and the slowdown it causes (runtime with it
//! over runtime alone on a device), also after a restart.

use hetpilot_e2e::gpu_tasks::two_gpu_agent;
use hetpilot_e2e::{free_port, wait_until, Manager};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// A shell fragment (no quotes, no braces) that touches `mine` in `dir`, then waits (bounded) for `theirs`: two
/// runs doing it mirror-wise are running at the same time when both go on.
fn meet(dir: &Path, mine: &str, theirs: &str) -> String {
    let d = dir.display();
    format!(
        "touch {d}/{mine}; i=0; while [ ! -e {d}/{theirs} ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; [ -e {d}/{theirs} ]"
    )
}

/// The rows of `/v1/affinity`'s `device_slowdown` of `app`, by co-runner set.
fn device_rows(m: &Manager, app: u64) -> Vec<Value> {
    let (status, view) = m.http().get("/v1/affinity", &m.admin);
    assert_eq!(status, 200, "{view}");
    view["device_slowdown"]
        .as_array()
        .unwrap_or_else(|| panic!("no device_slowdown in {view}"))
        .iter()
        .filter(|r| r["app"] == app)
        .cloned()
        .collect()
}

/// Checks the rows: `alpha` alone and next to `beta` (with the slowdown between them),
/// `beta` next to `alpha` only (never alone, so no slowdown).
fn check_rows(m: &Manager, alpha: u64, beta: u64) {
    let rows = device_rows(m, alpha);
    let sets: Vec<&Value> = rows.iter().map(|r| &r["co_runners"]).collect();
    assert_eq!(sets, [&json!([]), &json!([beta])], "{rows:?}");
    let (alone, shared) = (&rows[0], &rows[1]);
    assert_eq!(alone["slowdown"], 1.0, "{alone}");
    let alone_s = alone["runtime_s"].as_f64().unwrap();
    let shared_s = shared["runtime_s"].as_f64().unwrap();
    let slowdown = shared["slowdown"].as_f64().unwrap();
    assert!(alone_s > 0.0 && shared_s > 0.0, "{rows:?}");
    assert!(
        (slowdown - shared_s / alone_s).abs() < 1e-9,
        "slowdown = runtime with the set / runtime alone: {rows:?}"
    );
    assert_eq!(shared["alone_s"], alone["runtime_s"], "{rows:?}");
    let rows = device_rows(m, beta);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["co_runners"], json!([alpha]), "{rows:?}");
    assert_eq!(rows[0]["slowdown"], Value::Null, "{rows:?}");
}

#[test]
fn half_gpu_runs_of_two_applications_are_device_co_runners_with_a_measured_slowdown() {
    let dir = tempfile::tempdir().unwrap();
    let meet_dir = dir.path().join("meet");
    std::fs::create_dir_all(&meet_dir).unwrap();
    // The random second level keeps the pool's best fit, so beta's half joins alpha's on
    // one device (the co-runner-aware ones would first give beta, never measured alone, a
    // device of its own).
    let config = dir.path().join("hetpilot.toml");
    std::fs::write(&config, "[scheduler]\nsecond_level = \"random\"\n").unwrap();
    let env = [("HETPILOT_CONFIG", config.to_str().unwrap())];
    let port = free_port();
    let mut m = Manager::start_on(dir.path(), port, 30.0, &env);
    let mut agent = two_gpu_agent(&m, dir.path());
    wait_until("the agent to register", Duration::from_secs(20), || {
        let (_, agents) = m.http().get("/v1/agents", &m.admin);
        (agents.as_array()?.len() == 1).then_some(())
    });
    // alpha: a workflow of two half-GPU tasks; `first` runs alone, `second` (after it)
    // meets beta's task, so the two hold halves of a device at the same time.
    let alpha = m.submit(json!({
        "name": "alpha",
        "command": format!(
            "sh -c 'if [ {{}} = second ]; then {}; fi; sleep 0.2'",
            meet(&meet_dir, "alpha", "beta")
        ),
        "tasks": {"lines": ["first", "second"]},
        "dag": {"tasks": [{}, {"parents": [0]}]},
        "gpus": 0.5,
    }));
    wait_until(
        "alpha's first task to end alone",
        Duration::from_secs(60),
        || {
            let (_, s) = m.http().get(&format!("/v1/apps/{alpha}"), &m.admin);
            (s["counts"]["done"].as_u64() >= Some(1)).then_some(())
        },
    );
    let beta = m.submit(json!({
        "name": "beta",
        "command": format!("sh -c '{}; sleep 0.2'", meet(&meet_dir, "beta", "alpha")),
        "tasks": {"array": {"start": 0, "end": 0}},
        "gpus": 0.5,
    }));
    for app in [alpha, beta] {
        let summary = m.wait_finished(app, Duration::from_secs(60));
        assert_eq!(
            summary["counts"]["done"],
            2 - u64::from(app == beta),
            "{summary}"
        );
    }
    // The store has the sets too.
    let stored: Vec<String> = m
        .db()
        .prepare("SELECT device_co_runners FROM attempts WHERE app_id = ?1 ORDER BY idx")
        .unwrap()
        .query_map([alpha as i64], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(stored, ["[]".to_string(), format!("[{beta}]")]);
    check_rows(&m, alpha, beta);
    let out = m.cli(&["affinity", "--live"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Shared GPUs"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{alpha} alpha")) && l.contains("(alone)")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with(&format!("{beta} beta"))
            && l.contains(&alpha.to_string())
            && l.trim_end().ends_with('-')),
        "{text}"
    );

    // A restart rebuilds the profile from the store.
    let _ = agent.kill();
    let _ = agent.wait();
    m.kill();
    let m = Manager::start_on(dir.path(), port, 30.0, &env);
    check_rows(&m, alpha, beta);
}
