//! The framework's own ceiling: tasks that end without running, on
//! `hetpilot-agent --zero-work` agents of 16 slots, all on this machine with the manager.
//! Run on a release build: `cargo build --release --workspace --bins && cargo bench -p
//! hetpilot-e2e --bench zero_work -- [TASKS] [AGENTS,AGENTS,...]` (default 1,000,000 tasks
//! for 1, 4, 16 and 64 agents).
//!
//! Per row: tasks per second from the committed submit to the last committed result, the
//! manager's CPU per task, the p99 of a task's lease-to-end time (its wait in the agent's
//! prefetch queue plus the round trip), and the manager's peak RSS.

use hetpilot_e2e::proc_stats::{cpu_ms, rss_mib};
use hetpilot_e2e::{array_app, free_port, Manager};
use std::time::{Duration, Instant};

fn run(tasks: u64, agents: usize) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hetpilot.toml");
    std::fs::write(&config, "allow_zero_work = true\n").unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        60.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    let _agents: Vec<_> = (0..agents)
        .map(|_| m.agent("local", 16, &["--zero-work"]))
        .collect();
    let http = m.http();
    // Every agent registered before the clock starts.
    hetpilot_e2e::wait_until("the agents to register", Duration::from_secs(60), || {
        let (_, v) = http.get("/v1/agents", &m.admin);
        (v.as_array()?.len() == agents).then_some(())
    });
    let cpu0 = cpu_ms(m.child.id());
    let t = Instant::now();
    let (s, b) = http.post(
        "/v1/apps",
        &m.admin,
        &array_app("zero", "/bin/false", tasks),
    );
    assert_eq!(s, 200, "{b}");
    let submitted = t.elapsed().as_secs_f64();
    let app = b["app"].as_u64().unwrap();
    let mut seen = 0;
    loop {
        let (s, v) = http.get(
            &format!("/v1/apps/{app}?wait_ms=30000&seen={seen}"),
            &m.admin,
        );
        assert_eq!(s, 200, "{v}");
        seen = v["counts"]["done"].as_u64().unwrap();
        if seen == tasks {
            break;
        }
        assert_eq!(v["counts"]["failed"], 0, "{v}");
    }
    let secs = t.elapsed().as_secs_f64() - submitted;
    let cpu = cpu_ms(m.child.id()) - cpu0;
    let mut lat: Vec<i64> = {
        let db = m.db();
        let mut stmt = db
            .prepare("SELECT ended_ms - leased_ms FROM attempts WHERE app_id = ?1")
            .unwrap();
        let rows = stmt
            .query_map([app as i64], |r| r.get::<_, i64>(0))
            .unwrap();
        rows.map(Result::unwrap).collect()
    };
    lat.sort_unstable();
    let p99 = lat[(lat.len() * 99 / 100).min(lat.len() - 1)];
    println!(
        "{agents},{tasks},{submitted:.2},{secs:.2},{:.0},{:.4},{p99},{:.0}",
        tasks as f64 / secs,
        cpu / tasks as f64,
        rss_mib(m.child.id(), "VmHWM:")
    );
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let tasks: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let agents: Vec<usize> = args
        .next()
        .map(|a| a.split(',').map(|n| n.parse().unwrap()).collect())
        .unwrap_or_else(|| vec![1, 4, 16, 64]);
    println!("agents,tasks,submit_s,run_s,tasks_per_s,manager_cpu_ms_per_task,p99_lease_to_end_ms,manager_peak_rss_mib");
    for a in agents {
        run(tasks, a);
    }
}
