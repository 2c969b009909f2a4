//! Two applications sharing GPUs by halves, placed by best fit and by measured device
//! slowdowns: `cargo build --bins && cargo bench -p hetpilot-e2e --bench gpu_sharing`.
//!
//! Settings (fixed before any run): 2 applications x 20 tasks of `gpus = 0.5`, one local
//! agent of 2 slots with two fake GPUs (a fake `nvidia-smi`); each task holds a lock file
//! named by its device (`HETPILOT_GPUS`) for 0.3 s, so two runs on one device take turns:
//! emulated contention, not a GPU. Best fit is `policy = "round-robin"` (no rounds, so
//! fractions pack onto the fullest device); measured slowdown is `paf` rounds with the MAF
//! second level. Printed: each run's makespan (its first start to its last end, from the
//! store) and the share of runs that had a device co-runner.

use hetpilot_e2e::{free_port, wait_until, Manager};
use serde_json::json;
use std::time::Duration;

/// Makespan (s) and the share of runs that had a device co-runner, for two applications of
/// `n` half-GPU tasks each on one 2-slot agent with two fake GPUs, under the scheduler
/// `policy`. Each task emulates GPU work that contention slows: it holds a lock file
/// named by its device (`HETPILOT_GPUS`) for `work_s`, so two runs on one device take
/// turns.
fn contended_run(policy: &str, n: u64, work_s: f64) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hetpilot.toml");
    std::fs::write(
        &config,
        format!("[scheduler]\npolicy = \"{policy}\"\ninterval_ms = 100\n"),
    )
    .unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    let mut agent = hetpilot_e2e::gpu_tasks::two_gpu_agent_with(&m, "local", dir.path(), 2);
    wait_until("the agent to register", Duration::from_secs(20), || {
        let (_, agents) = m.http().get("/v1/agents", &m.admin);
        (agents.as_array()?.len() == 1).then_some(())
    });
    let locks = dir.path().join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    let command = format!(
        "sh -c 'flock {}/gpu-$HETPILOT_GPUS sleep {work_s}'",
        locks.display()
    );
    let apps: Vec<u64> = ["alpha", "beta"]
        .iter()
        .map(|name| {
            m.submit(json!({
                "name": name, "command": command, "gpus": 0.5,
                "tasks": {"array": {"start": 0, "end": n - 1}},
            }))
        })
        .collect();
    for &app in &apps {
        let s = m.wait_finished(app, Duration::from_secs(600));
        assert_eq!(s["counts"]["done"], n, "{s}");
    }
    let (first, last, shared, runs): (i64, i64, i64, i64) = m
        .db()
        .query_row(
            "SELECT MIN(started_ms), MAX(ended_ms),
                    SUM(device_co_runners != '[]'), COUNT(*)
             FROM attempts WHERE outcome = 'success'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    let _ = agent.kill();
    let _ = agent.wait();
    ((last - first) as f64 / 1000.0, shared as f64 / runs as f64)
}

fn main() {
    let (n, work_s) = (20, 0.3);
    let (packed_s, packed_shared) = contended_run("round-robin", n, work_s);
    let (spread_s, spread_shared) = contended_run("paf", n, work_s);
    println!(
        "2 apps x {n} tasks of gpus = 0.5, {work_s} s of lock-emulated GPU work, 2 slots, 2 fake GPUs:\n\
         best fit (round-robin, no rounds): makespan {packed_s:.1} s, {:.0}% of runs shared a device\n\
         measured slowdown (paf + maf):     makespan {spread_s:.1} s, {:.0}% of runs shared a device",
        100.0 * packed_shared,
        100.0 * spread_shared
    );
}
