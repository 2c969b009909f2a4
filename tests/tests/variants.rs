//! Applications with a GPU and a CPU variant on real agents, one with two fake GPUs beside
//! one without: the live rounds measure each (application, platform, variant), and the GPUs
//! go to the application whose GPU variant is much faster while the one that gains little
//! from a GPU runs on cores: measured affinity decides, not the order variants are declared
//! in (both declare the GPU first). `tasks` and `logs` say which variant each run was.

use hetpilot_e2e::gpu_tasks::two_gpu_agent_of;
use hetpilot_e2e::{wait_until, Manager};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(180);

/// A manager with platforms `gpu` and `cpu`, PAF and quick scheduling rounds.
fn start(dir: &Path) -> Manager {
    let config = dir.join("hetpilot.toml");
    std::fs::write(
        &config,
        "[[platforms]]\nname = \"gpu\"\n[[platforms]]\nname = \"cpu\"\n\
         [scheduler]\npolicy = \"paf\"\ninterval_ms = 100\n",
    )
    .unwrap();
    Manager::start_on(
        dir,
        hetpilot_e2e::free_port(),
        30.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    )
}

/// An application of `n` tasks whose GPU variant (1 GPU and 1 core, declared first)
/// sleeps `gpu_s` and whose CPU variant (2 cores) sleeps `cpu_s`.
fn app(name: &str, n: u64, gpu_s: f64, cpu_s: f64) -> Value {
    json!({
        "name": name,
        "command": "true",
        "tasks": {"array": {"start": 0, "end": n - 1}},
        "variants": [
            {"name": "gpu", "gpus": 1, "command": format!("sleep {gpu_s}")},
            {"name": "cpu", "cores": 2, "command": format!("sleep {cpu_s}")},
        ],
    })
}

/// Successful runs of `app` per variant, from the store.
fn runs_as(m: &Manager, app: u64, variant: &str) -> i64 {
    m.db()
        .query_row(
            "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND outcome = 'success'
             AND variant = ?2",
            rusqlite::params![app as i64, variant],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn the_gpus_go_to_the_application_whose_gpu_variant_gains_most() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path());
    let mut gpu_agent = two_gpu_agent_of(&m, "gpu", &dir.path().join("gpu"));
    let _cpu = m.agent("cpu", 4, &[]);
    let http = m.http();
    wait_until("both agents to register", LONG, || {
        let (_, agents) = http.get("/v1/agents", &m.admin);
        (agents.as_array()?.len() == 2).then_some(())
    });
    // Submitted first, so first fit hands it the GPUs whenever they are free; its first
    // tasks (before any round) and one exploration task take them anyway.
    let slight = m.submit(app("slight", 16, 0.5, 0.6));
    let strong = m.submit(app("strong", 80, 0.1, 1.0));
    m.wait_finished(slight, LONG);
    m.wait_finished(strong, LONG);

    let (slight_gpu, slight_cpu) = (runs_as(&m, slight, "gpu"), runs_as(&m, slight, "cpu"));
    let (strong_gpu, strong_cpu) = (runs_as(&m, strong, "gpu"), runs_as(&m, strong, "cpu"));
    eprintln!("slight: {slight_gpu} on GPU, {slight_cpu} on cores; strong: {strong_gpu} on GPU, {strong_cpu} on cores");
    assert_eq!(slight_gpu + slight_cpu, 16);
    assert_eq!(strong_gpu + strong_cpu, 80);
    assert!(
        strong_gpu >= 52,
        "the 10x application ran {strong_gpu} of 80 tasks on a GPU"
    );
    assert!(
        slight_gpu <= 5,
        "the application that gains little from a GPU ran {slight_gpu} of 16 tasks on one"
    );

    // `tasks` and `logs` name the variant each run was.
    let out = m.cli(&["tasks", &strong.to_string(), "--json"]);
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let variants: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["last"]["variant"].as_str())
        .collect();
    assert_eq!(variants.len(), 80, "{listed}");
    let gpu_task = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["last"]["variant"] == "gpu")
        .unwrap();
    let task = gpu_task["task"].as_str().map_or_else(
        || format!("{}.{}", strong, gpu_task["task"]["index"]),
        str::to_string,
    );
    let logs = m.cli(&["logs", &task]);
    let logs = String::from_utf8_lossy(&logs.stdout);
    assert!(logs.contains(" as gpu with gpus "), "{logs}");
    let table = m.cli(&["tasks", &strong.to_string(), "--all"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.lines().skip(1).any(|l| l.contains("gpu: gpus ")),
        "{table}"
    );
    assert!(table.lines().skip(1).any(|l| l.ends_with("cpu")), "{table}");
    let _ = gpu_agent.kill();
    wait_until("the GPU agent to stop", Duration::from_secs(10), || {
        gpu_agent.try_wait().ok().flatten()
    });
}

/// `hetpilot schedule` shows the variant plan: which variant of an application runs on
/// each platform, with the cores and GPUs its tasks got there, in the table and `--json`.
#[test]
fn the_schedule_shows_the_variant_plan_with_its_cores_and_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path());
    let mut gpu_agent = two_gpu_agent_of(&m, "gpu", &dir.path().join("gpu"));
    let _cpu = m.agent("cpu", 4, &[]);
    wait_until("both agents to register", LONG, || {
        let (_, agents) = m.http().get("/v1/agents", &m.admin);
        (agents.as_array()?.len() == 2).then_some(())
    });
    let strong = m.submit(app("strong", 60, 0.1, 1.0));
    let rows = wait_until("a round to plan strong's variants", LONG, || {
        let out = m.cli(&["schedule", "--json"]);
        assert!(out.status.success(), "{out:?}");
        let view: Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = view["variants"].as_array()?.clone();
        (!rows.is_empty()).then_some(rows)
    });
    let gpu_row = rows
        .iter()
        .find(|r| r["platform"] == "gpu" && r["variant"] == "gpu")
        .unwrap_or_else(|| panic!("no GPU variant on the GPU platform in {rows:?}"));
    assert_eq!(gpu_row["app"], strong, "{gpu_row}");
    assert_eq!(gpu_row["name"], "strong", "{gpu_row}");
    let tasks = gpu_row["tasks"].as_u64().unwrap();
    assert!(tasks >= 1, "{gpu_row}");
    assert_eq!(
        gpu_row["gpus"].as_f64(),
        Some(tasks as f64),
        "1 GPU a task: {gpu_row}"
    );
    assert_eq!(
        gpu_row["cores"].as_u64(),
        Some(tasks),
        "1 core a task: {gpu_row}"
    );
    for r in &rows {
        let cores_per_task = if r["variant"] == "cpu" { 2 } else { 1 };
        assert_eq!(
            r["cores"].as_u64(),
            r["tasks"].as_u64().map(|t| t * cores_per_task),
            "{r}"
        );
    }
    let out = m.cli(&["schedule"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("variant plan:"), "{text}");
    assert!(
        text.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.len() == 7
                && words[..4] == [strong.to_string().as_str(), "strong", "gpu", "gpu"]
                && words[4].parse::<u64>().is_ok_and(|t| t >= 1)
        }),
        "{text}"
    );
    let _ = gpu_agent.kill();
    wait_until("the GPU agent to stop", Duration::from_secs(10), || {
        gpu_agent.try_wait().ok().flatten()
    });
}
