//! The task-event stream's throughput: TASKS tasks end on `--zero-work` agents (4 of 16
//! slots, all on this machine with the manager) while one client follows
//! `GET /v1/apps/ID/events`, then the same client replays the finished application's
//! whole stream from cursor 0. Run on a release build: `cargo build --release --workspace
//! --bins && cargo bench -p hetpilot-e2e --bench event_stream -- [TASKS]` (default
//! 1,000,000).
//!
//! Per row: the phase (`live`: the ends streamed as they happen, so the figure is bound by
//! dispatch; `replay`: the stored ends only), events received, seconds, events per second,
//! and the manager's CPU per event (in `live`, dispatching the tasks included).

use hetpilot_e2e::proc_stats::cpu_ms;
use hetpilot_e2e::{array_app, free_port, wait_until, Manager};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

/// Reads `app`'s stream from cursor 0 to the application's end; the task ends counted.
fn follow(m: &Manager, app: u64) -> u64 {
    let client = reqwest::blocking::Client::builder()
        .timeout(None)
        .build()
        .unwrap();
    let resp = client
        .get(format!("{}/v1/apps/{app}/events?after=0", m.url))
        .bearer_auth(&m.admin)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut ends = 0;
    for line in BufReader::new(resp).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        match event["type"].as_str() {
            Some("task_end") => ends += 1,
            Some("app_end") => return ends,
            _ => {}
        }
    }
    panic!("the stream closed before the application's end, after {ends} ends");
}

fn row(phase: &str, m: &Manager, tasks: u64, run: impl FnOnce() -> u64) {
    let cpu0 = cpu_ms(m.child.id());
    let t = Instant::now();
    let ends = run();
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_ms(m.child.id()) - cpu0;
    assert_eq!(ends, tasks, "every end arrived once");
    println!(
        "{phase},{ends},{secs:.2},{:.0},{:.4}",
        ends as f64 / secs,
        cpu / ends as f64
    );
}

fn main() {
    let tasks: u64 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hetpilot.toml");
    std::fs::write(&config, "allow_zero_work = true\n").unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        60.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    let agents: Vec<_> = (0..4)
        .map(|_| m.agent("local", 16, &["--zero-work"]))
        .collect();
    let http = m.http();
    wait_until("the agents to register", Duration::from_secs(60), || {
        let (_, v) = http.get("/v1/agents", &m.admin);
        (v.as_array()?.len() == agents.len()).then_some(())
    });
    println!("phase,events,seconds,events_per_s,manager_cpu_ms_per_event");
    let (s, b) = http.post(
        "/v1/apps",
        &m.admin,
        &array_app("events", "/bin/true", tasks),
    );
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    row("live", &m, tasks, || follow(&m, app));
    drop(agents);
    row("replay", &m, tasks, || follow(&m, app));
}
