//! Competing workflows through the real manager and agents: the configured workflow
//! policy (`[scheduler] workflows`) decides which workflow's tasks fill an agent's slots,
//! observable in `hetpilot tasks APP --json`'s started_ms / ended_ms; each workflow task
//! reserves its own cores on the agent; an unknown policy stops the manager at start.

use hetpilot_e2e::{bin, free_port, Manager};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// (started_ms, ended_ms) of every task of `app`, by name, in name order.
fn runs(m: &Manager, app: u64) -> Vec<(String, u64, u64)> {
    let out = m.cli(&["tasks", &app.to_string(), "--json", "--limit", "1000"]);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut runs: Vec<(String, u64, u64)> = rows
        .iter()
        .map(|t| {
            assert_eq!(t["state"], "done", "{t}");
            (
                t["name"].as_str().unwrap().to_string(),
                t["started_ms"].as_u64().unwrap(),
                t["ended_ms"].as_u64().unwrap(),
            )
        })
        .collect();
    runs.sort();
    runs
}

fn submit(m: &Manager, file: &Path) -> u64 {
    let out = m.cli(&["submit", file.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    answer["app"].as_u64().unwrap()
}

/// A workflow file of independent tasks `(id, cores, recorded runtime s, sleep s)`.
fn workflow_file(dir: &Path, name: &str, tasks: &[(&str, u32, u32, f64)]) -> PathBuf {
    let mut text = format!("name = \"{name}\"\n");
    for (id, cores, runtime, sleep) in tasks {
        text += &format!(
            "[[task]]\nid = \"{id}\"\ncommand = \"sleep {sleep}\"\ncores = {cores}\n\
             runtime = \"{runtime}s\"\n"
        );
    }
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn overlap(a: &(String, u64, u64), b: &(String, u64, u64)) -> bool {
    a.1 < b.2 && b.1 < a.2
}

/// A wide workflow (4 tasks recorded at 4 s) submitted before a short one (2 tasks at
/// 1 s), then one 2-slot agent: returns each workflow's runs.
type Runs = Vec<(String, u64, u64)>;

fn wide_then_short(policy: &str) -> (Runs, Runs) {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[("HETPILOT_SCHEDULER__WORKFLOWS", policy)],
    );
    let wide = (0..4)
        .map(|i| (["w0", "w1", "w2", "w3"][i], 1, 4, 0.6))
        .collect::<Vec<_>>();
    let wide = submit(&m, &workflow_file(dir.path(), "wide", &wide));
    let short = submit(
        &m,
        &workflow_file(dir.path(), "short", &[("s0", 1, 1, 0.6), ("s1", 1, 1, 0.6)]),
    );
    let _agent = m.agent("local", 2, &[]);
    for app in [wide, short] {
        let s = m.wait_finished(app, Duration::from_secs(120));
        assert_eq!(
            s["counts"]["done"].as_u64(),
            Some(if app == wide { 4 } else { 2 })
        );
    }
    (runs(&m, wide), runs(&m, short))
}

#[test]
fn round_robin_lets_the_wide_workflow_in_beside_the_short_one() {
    let (wide, short) = wide_then_short("round-robin");
    let short_end = short.iter().map(|r| r.2).max().unwrap();
    assert!(
        wide.iter().any(|w| w.1 < short_end),
        "a wide task ran before the short workflow ended: {wide:?} {short:?}"
    );
}

#[test]
fn the_multiple_ptg_policies_give_the_cores_to_the_short_workflow_first() {
    // CRA_WORK_WEIGHT (bl / C*²: 1 against 4/8²) and CAFM_K_SHELVES (the short box in the
    // first shelf) both run the short workflow's two tasks on the two slots first: its
    // stretch is 1, where round-robin makes it share them with the wide one.
    for policy in ["cra-work-weight", "cafm-k-shelves"] {
        let (wide, short) = wide_then_short(policy);
        let short_end = short.iter().map(|r| r.2).max().unwrap();
        assert!(overlap(&short[0], &short[1]), "{policy}: {short:?}");
        assert!(
            wide.iter().all(|w| w.1 >= short_end),
            "{policy}: no wide task starts before the short workflow ends: {wide:?} {short:?}"
        );
    }
}

#[test]
fn each_workflow_task_reserves_its_own_cores() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    // Bottom levels put the 1-core tasks first (recorded 2 s), then the 2-core ones.
    let file = workflow_file(
        dir.path(),
        "cores",
        &[
            ("a", 1, 2, 0.8),
            ("b", 1, 2, 0.8),
            ("c", 2, 1, 0.8),
            ("d", 2, 1, 0.8),
        ],
    );
    let app = submit(&m, &file);
    let _agent = m.agent("local", 2, &[]);
    m.wait_finished(app, Duration::from_secs(120));
    let r = runs(&m, app);
    let (a, b, c, d) = (&r[0], &r[1], &r[2], &r[3]);
    assert!(
        overlap(a, b),
        "two 1-core tasks side by side on 2 slots: {r:?}"
    );
    for wide in [c, d] {
        for other in r.iter().filter(|o| o.0 != wide.0) {
            assert!(
                !overlap(wide, other),
                "a 2-core task shares the 2 slots with nothing: {r:?}"
            );
        }
    }
}

#[test]
fn an_unknown_workflow_policy_stops_the_manager_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin("hetpilot"))
        .args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
        .arg("--data-dir")
        .arg(dir.path())
        .env_remove("HETPILOT_CONFIG")
        .env("HETPILOT_SCHEDULER__WORKFLOWS", "selfish")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown workflow policy `selfish`") && err.contains("cafm-k-shelves"),
        "{err}"
    );
}
