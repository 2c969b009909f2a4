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

/// A search pipeline of Debian base programs as a WfCommons instance: split the queries
/// in three, search each part in the database (`grep -F -f`), merge the sorted hits.
fn search_pipeline(dir: &Path) -> std::path::PathBuf {
    let sh = |script: &str| serde_json::json!({"program": "sh", "arguments": ["-c", script]});
    let mut spec_tasks = vec![serde_json::json!({
        "id": "split", "parents": [], "children": ["search_0", "search_1", "search_2"],
        "inputFiles": ["queries.txt"], "outputFiles": ["part.00", "part.01", "part.02"]
    })];
    let mut exec_tasks = vec![serde_json::json!({
        "id": "split", "runtimeInSeconds": 0.1,
        "command": sh("split -d -n l/3 queries.txt part.")
    })];
    for i in 0..3 {
        spec_tasks.push(serde_json::json!({
            "id": format!("search_{i}"), "parents": ["split"], "children": ["merge"],
            "inputFiles": [format!("part.0{i}"), "db.txt"], "outputFiles": [format!("hits.0{i}")]
        }));
        exec_tasks.push(serde_json::json!({
            "id": format!("search_{i}"), "runtimeInSeconds": 0.1,
            "command": sh(&format!("{{ grep -F -f part.0{i} db.txt || true; }} | sort > hits.0{i}"))
        }));
    }
    spec_tasks.push(serde_json::json!({
        "id": "merge", "parents": ["search_0", "search_1", "search_2"], "children": [],
        "inputFiles": ["hits.00", "hits.01", "hits.02"], "outputFiles": ["result.txt"]
    }));
    exec_tasks.push(serde_json::json!({
        "id": "merge", "runtimeInSeconds": 0.1,
        "command": sh("cat hits.00 hits.01 hits.02 | sort > result.txt")
    }));
    // No recorded sizes: a recorded size is checked against what the task wrote.
    let mut files: Vec<Value> = ["queries.txt", "db.txt", "result.txt"]
        .iter()
        .map(|f| serde_json::json!({"id": f}))
        .collect();
    for i in 0..3 {
        files.push(serde_json::json!({"id": format!("part.0{i}")}));
        files.push(serde_json::json!({"id": format!("hits.0{i}")}));
    }
    let wf = serde_json::json!({
        "schemaVersion": "1.5", "name": "search",
        "workflow": {
            "specification": {"tasks": spec_tasks, "files": files},
            "execution": {"makespanInSeconds": 1, "tasks": exec_tasks}
        }
    });
    let path = dir.join("search.json");
    std::fs::write(&path, wf.to_string()).unwrap();
    path
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_real_search_pipeline_runs_unwrapped_on_two_slurm_agents_as_it_does_in_a_shell() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    // Inputs generated here: 300 queries, a database holding every third of them among
    // other lines.
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    let seq = |i: u32| format!("ACGT{:08}TTGA", (i * 7919) % 100_000_000);
    let queries: String = (0..300).map(|i| format!("{}\n", seq(i))).collect();
    let db: String = (0..900)
        .map(|i| match i % 3 {
            0 => format!("hit {} db{i}\n", seq(i / 3 * 3)),
            _ => format!("other GGGG{i:06} db{i}\n"),
        })
        .collect();
    std::fs::write(inputs.join("queries.txt"), &queries).unwrap();
    std::fs::write(inputs.join("db.txt"), &db).unwrap();
    // The same pipeline, run directly in a shell.
    let direct = dir.path().join("direct");
    std::fs::create_dir_all(&direct).unwrap();
    for f in ["queries.txt", "db.txt"] {
        std::fs::copy(inputs.join(f), direct.join(f)).unwrap();
    }
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            "split -d -n l/3 queries.txt part. && for i in 0 1 2; do \
             { grep -F -f part.0$i db.txt || true; } | sort > hits.0$i; done && \
             cat hits.00 hits.01 hits.02 | sort > result.txt",
        )
        .current_dir(&direct)
        .status()
        .unwrap();
    assert!(status.success());
    let expected = std::fs::read_to_string(direct.join("result.txt")).unwrap();
    assert_eq!(expected.lines().count(), 100, "every third query hits once");

    // Two one-core pilots on the `debug` partition: two agents of one slot each. Without
    // prefetch: with it, the agent that ran the split may lease the three searches (each a
    // few milliseconds) before the other agent's poll is answered.
    let one = dir.path().join("lab-one.toml");
    let text = std::fs::read_to_string(lab::shipped_profile("lab-debug"))
        .unwrap()
        .replace("name = \"lab-debug\"", "name = \"lab-one\"")
        .replace("cores_per_node = 8", "cores_per_node = 1")
        .replace("max_running = 1", "max_running = 2")
        .replace("/lab-debug\"", "/lab-one\"")
        + "setup = [\"export HETPILOT_PREFETCH=0\"]\n";
    std::fs::write(&one, text).unwrap();
    // Idle agents stay while the split and the merge run alone.
    let env = configure(
        dir.path(),
        &[("lab-one", &one)],
        &format!("{FAST}\nidle_timeout_secs = 300"),
    );
    let m = start_manager(dir.path(), &env);
    // Both agents up and busy before the pipeline comes, so its parallel searches find
    // two agents of one slot each: files move between agents through the file service.
    let warm = m.submit(hetpilot_e2e::array_app("warm-up", "sleep 600", 2));
    wait_until(
        "two agents each running a warm-up task",
        Duration::from_secs(180),
        || {
            let (_, agents) = m.http().get("/v1/agents", &m.admin);
            let busy = agents
                .as_array()?
                .iter()
                .filter(|a| a["platform"] == "lab-one" && a["tasks_held"].as_u64() == Some(1))
                .count();
            (busy == 2).then_some(())
        },
    );
    let wf = search_pipeline(dir.path());
    let out = m.cli(&[
        "submit",
        "--wfcommons",
        wf.to_str().unwrap(),
        "--inputs-dir",
        inputs.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let app = serde_json::from_slice::<Value>(&out.stdout).unwrap()["app"]
        .as_u64()
        .unwrap();
    // The pipeline waits for the warm-up's slots, so demand never drops to nothing.
    let (s, b) = m.http().post(
        &format!("/v1/apps/{warm}/cancel"),
        &m.admin,
        &serde_json::json!({}),
    );
    assert_eq!(s, 200, "{b}");
    let summary = m.wait_finished(app, Duration::from_secs(300));
    let out = m.cli(&["tasks", &app.to_string(), "--json"]);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let errors: Vec<&Value> = rows.iter().map(|t| &t["last"]["error"]).collect();
    assert_eq!(summary["counts"]["done"], 5, "{summary}: {errors:?}");
    // The merged result, stored by the pilot's agent under the workflow's prefix.
    let mut found = Vec::new();
    let mut stack = vec![dir.path().join("files")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "result.txt") {
                found.push(p);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(std::fs::read_to_string(&found[0]).unwrap(), expected);
    let (_, report) = m.http().get(&format!("/v1/apps/{app}/report"), &m.admin);
    assert_eq!(report["platforms"][0]["platform"], "lab-one", "{report}");
    // The pipeline ran on both agents: some task's inputs came from the other agent.
    let agents: std::collections::BTreeSet<u64> = rows
        .iter()
        .map(|t| t["last"]["agent"].as_u64().unwrap())
        .collect();
    assert_eq!(agents.len(), 2, "tasks on both agents: {rows:?}");
}
