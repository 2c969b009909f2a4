//! Heartbeats while the manager plans (no planning runs on the async runtime). Run:
//! `cargo build --release --workspace --bins && cargo bench -p hetpilot-e2e --bench
//! heartbeat_under_planning` (`-- TASKS AGENTS` to change the defaults, 20000 and 16).
//!
//! A data-intensive application of TASKS tasks (each reads two of 2,000 shared 1 MiB files, paired pseudo-randomly,
//! declared with their sizes) is submitted to a release manager. AGENTS agents register and
//! heartbeat every 50 ms over HTTP; then one agent pulls, which makes the manager build and
//! run the Het-HPS plan for all TASKS tasks. Reported: how long that pull took (the
//! planning), how many heartbeats were answered while it ran, and their latency p50, p99
//! and maximum. Target: p99 under 50 ms.

use hetpilot_e2e::Manager;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let tasks = args.first().copied().unwrap_or(20_000);
    let agents = args.get(1).copied().unwrap_or(16) as usize;
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 60.0);
    let http = m.http();
    let params: Vec<serde_json::Value> = (0..tasks)
        .map(|i| json!({"a": (i % 1000).to_string(), "b": (i * 7919 % 1000).to_string()}))
        .collect();
    let (s, b) = http.post(
        "/v1/apps",
        &m.admin,
        &json!({
            "name": "planning", "command": "true", "tasks": {"params": params},
            "inputs": [{"uri": "a/a{a}.bin", "size": 1 << 20}, {"uri": "b/b{b}.bin", "size": 1 << 20}],
            "data_intensive": true
        }),
    );
    assert_eq!(s, 200, "{b}");
    let registered: Vec<(u64, String)> = (0..agents)
        .map(|i| {
            let token = m.agent_token("local");
            let (s, b) = http.post(
                "/v1/agents",
                &token,
                &json!({"platform": "local", "hostname": format!("node{i}"), "cores": 4,
                        "memory_mb": 4096, "slots": 4}),
            );
            assert_eq!(s, 200, "{b}");
            (
                b["agent"].as_u64().unwrap(),
                b["credential"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let planning = Arc::new(AtomicBool::new(false));
    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let beaters: Vec<_> = registered
        .iter()
        .cloned()
        .map(|(id, cred)| {
            let (stop, planning, latencies) = (stop.clone(), planning.clone(), latencies.clone());
            let url = format!("{}/v1/agents/{id}/heartbeat", m.url);
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::new();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let r = client
                        .post(&url)
                        .bearer_auth(&cred)
                        .json(&json!({"seen_up_to_ms": 0, "held": []}))
                        .send()
                        .unwrap();
                    assert!(r.status().is_success(), "{}", r.status());
                    let ms = t.elapsed().as_secs_f64() * 1000.0;
                    if planning.load(Ordering::Relaxed) {
                        latencies.lock().unwrap().push(ms);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        })
        .collect();
    let (id, cred) = &registered[0];
    planning.store(true, Ordering::Relaxed);
    let t = Instant::now();
    let (s, b) = http.post(
        &format!("/v1/agents/{id}/pull"),
        cred,
        &json!({"max": 1, "wait_ms": 0}),
    );
    let plan_secs = t.elapsed().as_secs_f64();
    planning.store(false, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    for b in beaters {
        b.join().unwrap();
    }
    assert_eq!(s, 200, "{b}");
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    assert!(
        log.contains("het-hps staging plan bound to agents"),
        "the pull made a plan"
    );
    let mut l = latencies.lock().unwrap().clone();
    l.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "tasks {tasks}, agents {agents}: planning pull {plan_secs:.2} s; {} heartbeats during it: \
         p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        l.len(),
        percentile(&l, 0.5),
        percentile(&l, 0.99),
        l.last().copied().unwrap_or(f64::NAN)
    );
}
