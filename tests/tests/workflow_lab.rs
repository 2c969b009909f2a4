//! A published workflow instance replayed with `--emulate` on pilots the manager submits
//! through the local lab's real Slurm (`deploy/lab/start.sh`): every task done, none
//! started before its parents ended, its external inputs staged from the file service.

use hetpilot_e2e::lab::{self, configure, start_manager};
use hetpilot_e2e::wait_until;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

const FAST: &str = "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 2\nbackoff_max_secs = 30";

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn an_emulated_workflow_replays_in_dependency_order_on_slurm_pilots() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let debug = lab::shipped_profile("lab-debug");
    let env = configure(dir.path(), &[("lab-debug", &debug)], FAST);
    let m = start_manager(dir.path(), &env);
    let instance = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples/workflows/epigenomics-chameleon-hep-1seq-100k-001.json");
    let out = m.cli(&[
        "submit",
        "--wfcommons",
        instance.to_str().unwrap(),
        "--emulate",
        "--time-scale",
        "0.01",
        "--size-scale",
        "0.001",
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let app = serde_json::from_slice::<Value>(&out.stdout).unwrap()["app"]
        .as_u64()
        .unwrap();
    let summary = m.wait_finished(app, Duration::from_secs(300));
    assert_eq!(summary["counts"]["done"], 41, "{summary}");
    let out = m.cli(&["tasks", &app.to_string(), "--json", "--limit", "1000"]);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let tasks: HashMap<&str, &Value> = rows
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t))
        .collect();
    let mut edges = 0;
    for (name, t) in &tasks {
        assert_eq!(t["state"], "done", "{name}");
        let started = t["started_ms"].as_u64().unwrap();
        for p in t["parents"].as_array().unwrap() {
            let ended = tasks[p.as_str().unwrap()]["ended_ms"].as_u64().unwrap();
            assert!(
                ended <= started,
                "{name} started before its parent {p} ended"
            );
            edges += 1;
        }
    }
    assert!(edges >= 40, "{edges}");
    // The tasks ran on the Slurm pilot's agent, not anywhere else.
    let (_, report) = m.http().get(&format!("/v1/apps/{app}/report"), &m.admin);
    let platforms: Vec<&str> = report["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["platform"].as_str().unwrap())
        .collect();
    assert_eq!(platforms, ["lab-debug"], "{report}");
    let pilot = wait_until(
        "a pilot with its Slurm job",
        Duration::from_secs(10),
        || {
            lab::pilots(&m)
                .into_iter()
                .find(|p| p["batch_job_id"].is_string())
        },
    );
    assert_eq!(pilot["platform"], "lab-debug", "{pilot}");
}
