//! Many agents on one manager: a load generator that plays N agents with the
//! real protocol over HTTP — register, long-poll pulls, heartbeats at the interval the
//! manager asks for, batched reports — against one release manager on 127.0.0.1. Agents
//! come from 250 loopback addresses (127.0.0.2-251), as agents on many hosts would, and
//! run zero-work tasks of a fixed duration (a timer, no process), 16 slots each. The
//! manager's lease timeout is 8 s, so it asks for a heartbeat every 2 s. As a real agent
//! does, each simulated agent starts its heartbeats as soon as it has registered, and
//! makes every call after registration on one HTTP/2 connection where the manager says it
//! serves HTTP/2 (so 10,000 agents hold 10,000 descriptors in the generator and in the
//! manager, within a 20,000 open-files limit). `BENCH_HTTP1=1` plays agents of before
//! HTTP/2 (two connections each), for comparison.
//!
//! `cargo build --release --workspace --bins && cargo bench -p hetpilot-e2e --bench
//! many_agents -- [AGENTS,AGENTS,...] [TASK_MS]` (default 1000 agents, 1 s tasks).
//!
//! Per agent count: registration time; an idle phase (10 s of heartbeats and waiting long
//! polls) for the manager's CPU per heartbeat and per agent per second; a work phase of 10 tasks per slot for its
//! CPU per pull (with the report that follows it), the tasks per second, heartbeat latency
//! (p50, p99, max) against its deadline (the heartbeat interval: the next one is due
//! then), lost agents and tasks leased more than once (lost leases). The generator runs on
//! one thread, sharing the 2 cores with the manager.

use hetpilot_e2e::proc_stats::cpu_ms;
use hetpilot_e2e::{array_app, free_port, Manager};
use hetpilot_protocol::protocol::{
    HeartbeatRequest, HeartbeatResponse, Measurements, Outcome, PullRequest, PullResponse,
    RegisterRequest, RegisterResponse, ReportRequest, ReportResponse, TaskAttempt, TaskResult,
};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SLOTS: u32 = 16;
/// Tasks per slot in the work phase.
const TASKS_PER_SLOT: u64 = 10;

/// What the simulated agents measure, shared.
#[derive(Default)]
struct Stats {
    heartbeats: AtomicU64,
    pulls: AtomicU64,
    /// Heartbeat round trips (µs) during the work phase.
    heartbeat_us: Mutex<Vec<u64>>,
    late_heartbeats: AtomicU64,
    failed_calls: AtomicU64,
    recording: AtomicBool,
    /// The longest heartbeat interval the manager told, milliseconds.
    interval_ms: AtomicU64,
}

struct SimAgent {
    http: reqwest::Client,
    base: String,
    credential: String,
    /// The heartbeat interval the manager told at registration, milliseconds.
    interval_ms: u64,
    held: Mutex<HashSet<TaskAttempt>>,
    seen_up_to_ms: AtomicU64,
}

/// A client from the `i`th agent's loopback address; HTTP/2 only with `http2` (unless
/// `BENCH_HTTP1` is set: agents of before HTTP/2, for comparison). Plain HTTP: no
/// certificates to load, so a client is cheap to build.
fn client(i: usize, http2: bool) -> reqwest::Client {
    let octet = 2 + (i % 250) as u8;
    let builder = reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, octet)))
        .pool_idle_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(120))
        .tls_certs_only(std::iter::empty());
    let builder = if http2 && std::env::var_os("BENCH_HTTP1").is_none() {
        builder.http2_prior_knowledge()
    } else {
        builder
    };
    builder.build().unwrap()
}

async fn register(url: String, token: String, i: usize) -> SimAgent {
    let http = client(i, false);
    let req = RegisterRequest {
        platform: "local".into(),
        hostname: format!("sim-{i}"),
        cores: SLOTS,
        memory_mb: 64 * 1024,
        slots: Some(SLOTS),
        batch_job_id: None,
        walltime_end: None,
        pilot: None,
        zero_work: true,
        resources: Default::default(),
        protocol_version: hetpilot_protocol::agent_version::AGENT_PROTOCOL,
        registration_key: None,
    };
    let r: RegisterResponse = http
        .post(format!("{url}/v1/agents"))
        .bearer_auth(&token)
        .json(&req)
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .json()
        .await
        .unwrap();
    SimAgent {
        http: if r.http2 { client(i, true) } else { http },
        base: format!("{url}/v1/agents/{}", r.agent),
        credential: r.credential,
        interval_ms: r.heartbeat_interval_ms,
        held: Mutex::new(HashSet::new()),
        seen_up_to_ms: AtomicU64::new(0),
    }
}

/// A heartbeat tick every `ms` milliseconds; a late beat delays the next ones.
fn beating_every(ms: u64) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(Duration::from_millis(ms.max(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

async fn heartbeats(agent: Arc<SimAgent>, stats: Arc<Stats>, stop: Arc<AtomicBool>) {
    let mut interval_ms = agent.interval_ms;
    stats.interval_ms.fetch_max(interval_ms, Ordering::Relaxed);
    let mut tick = beating_every(interval_ms);
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let body = HeartbeatRequest {
            seen_up_to_ms: agent.seen_up_to_ms.load(Ordering::Relaxed),
            held: agent.held.lock().unwrap().iter().copied().collect(),
            started: Vec::new(),
        };
        let t = Instant::now();
        let r = agent
            .http
            .post(format!("{}/heartbeat", agent.base))
            .bearer_auth(&agent.credential)
            .json(&body)
            .send()
            .await
            .and_then(|r| r.error_for_status());
        let us = t.elapsed().as_micros() as u64;
        match r {
            Ok(r) => {
                // Follow the cadence the manager tells, as a real agent does.
                let told = r
                    .json::<HeartbeatResponse>()
                    .await
                    .ok()
                    .and_then(|r| r.heartbeat_interval_ms);
                if let Some(told) = told.filter(|t| *t != interval_ms) {
                    interval_ms = told;
                    stats.interval_ms.fetch_max(told, Ordering::Relaxed);
                    tick = beating_every(told);
                    tick.reset();
                }
            }
            Err(e) => {
                if is_gone(&e) {
                    return;
                }
                stats.failed_calls.fetch_add(1, Ordering::Relaxed);
            }
        }
        stats.heartbeats.fetch_add(1, Ordering::Relaxed);
        if stats.recording.load(Ordering::Relaxed) {
            stats.heartbeat_us.lock().unwrap().push(us);
            if us > interval_ms * 1000 {
                stats.late_heartbeats.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Pull, "run" each task for `task_ms` on the 16 slots (in waves), report the batch, pull.
async fn work(agent: Arc<SimAgent>, stats: Arc<Stats>, stop: Arc<AtomicBool>, task_ms: u64) {
    while !stop.load(Ordering::Relaxed) {
        let req = PullRequest {
            max: SLOTS * 2,
            wait_ms: 20_000,
            started: Vec::new(),
        };
        let resp = agent
            .http
            .post(format!("{}/pull", agent.base))
            .bearer_auth(&agent.credential)
            .json(&req)
            .send()
            .await
            .and_then(|r| r.error_for_status());
        let pulled: PullResponse = match resp {
            Ok(r) => match r.json().await {
                Ok(p) => p,
                Err(_) => continue,
            },
            Err(e) => {
                if is_gone(&e) {
                    return;
                }
                stats.failed_calls.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        stats.pulls.fetch_add(1, Ordering::Relaxed);
        if pulled.tasks.is_empty() {
            continue;
        }
        agent
            .seen_up_to_ms
            .fetch_max(pulled.lease_ms, Ordering::Relaxed);
        let runs: Vec<TaskAttempt> = pulled
            .tasks
            .iter()
            .map(|t| TaskAttempt {
                task: t.task,
                attempt: t.attempt,
            })
            .collect();
        agent.held.lock().unwrap().extend(runs.iter().copied());
        let waves = runs.len().div_ceil(SLOTS as usize) as u64;
        let start = unix_ms();
        tokio::time::sleep(Duration::from_millis(task_ms * waves)).await;
        let end = unix_ms();
        let results = runs
            .iter()
            .map(|&at| {
                TaskResult::without_output(
                    at,
                    Outcome::Success,
                    Measurements {
                        started_at_ms: start,
                        ended_at_ms: end,
                        wall_ms: task_ms as f64,
                        ..Default::default()
                    },
                    None,
                )
            })
            .collect();
        let sent = agent
            .http
            .post(format!("{}/results", agent.base))
            .bearer_auth(&agent.credential)
            .json(&ReportRequest {
                results,
                wanted: None,
            })
            .send()
            .await
            .and_then(|r| r.error_for_status());
        match sent {
            Ok(r) => {
                let _ = r.json::<ReportResponse>().await;
            }
            Err(_) => {
                stats.failed_calls.fetch_add(1, Ordering::Relaxed);
            }
        }
        let mut held = agent.held.lock().unwrap();
        for r in &runs {
            held.remove(r);
        }
    }
}

/// The manager no longer knows the agent (lost, its credential revoked): a real agent
/// stops (`agent::is_gone`), so the simulated one stops calling too.
fn is_gone(e: &reqwest::Error) -> bool {
    matches!(e.status().map(|s| s.as_u16()), Some(401 | 404 | 410))
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn percentile(v: &mut [u64], p: f64) -> f64 {
    v.sort_unstable();
    v[((v.len() as f64 - 1.0) * p).round() as usize] as f64 / 1000.0
}

fn run(agents: usize, task_ms: u64) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hetpilot.toml");
    // HEARTBEATS_PER_SECOND overrides the manager's heartbeat budget (default 1,000).
    let budget = std::env::var("HEARTBEATS_PER_SECOND")
        .map(|n| format!("heartbeats_per_second = {}\n", n.parse::<u32>().unwrap()))
        .unwrap_or_default();
    std::fs::write(
        &config,
        format!("allow_zero_work = true\n{budget}[limits]\nregister_burst = 100000\nregistrations_per_minute = 1000000\n"),
    )
    .unwrap();
    // Heartbeats every 2 s (a quarter of the lease timeout), so the work phase sees many.
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        8.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    let token = m.agent_token("local");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stats = Arc::new(Stats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let t = Instant::now();
    let mut handles = Vec::new();
    let sims: Vec<Arc<SimAgent>> = rt.block_on(async {
        let mut out = Vec::new();
        // In groups of 50 at once; each agent beats from its registration on, as a real
        // one does (a lease timeout shorter than the whole registration storm would
        // otherwise lose the first agents).
        for chunk in (0..agents).collect::<Vec<_>>().chunks(50) {
            let regs = chunk
                .iter()
                .map(|&i| register(m.url.clone(), token.clone(), i));
            for a in futures_join_all(regs).await {
                let a = Arc::new(a);
                handles.push(tokio::spawn(heartbeats(
                    a.clone(),
                    stats.clone(),
                    stop.clone(),
                )));
                out.push(a);
            }
        }
        out
    });
    let register_s = t.elapsed().as_secs_f64();
    let tasks = agents as u64 * u64::from(SLOTS) * TASKS_PER_SLOT;
    let (idle_cpu_per_hb, idle_cpu_per_agent_s, work) = rt.block_on(async {
        for a in &sims {
            handles.push(tokio::spawn(work(
                a.clone(),
                stats.clone(),
                stop.clone(),
                task_ms,
            )));
        }
        // Idle: heartbeats and waiting long polls only.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (hb0, cpu0, idle_start) = (
            stats.heartbeats.load(Ordering::Relaxed),
            cpu_ms(m.child.id()),
            Instant::now(),
        );
        tokio::time::sleep(Duration::from_secs(10)).await;
        let hbs = stats.heartbeats.load(Ordering::Relaxed) - hb0;
        let idle_cpu = cpu_ms(m.child.id()) - cpu0;
        let idle = idle_cpu / hbs.max(1) as f64;
        // Milliseconds of manager CPU per agent per second of wall time, idle.
        let per_agent_s = idle_cpu / agents as f64 / idle_start.elapsed().as_secs_f64();
        // Work.
        stats.recording.store(true, Ordering::Relaxed);
        let (p0, hb1, cpu1) = (
            stats.pulls.load(Ordering::Relaxed),
            stats.heartbeats.load(Ordering::Relaxed),
            cpu_ms(m.child.id()),
        );
        let t = Instant::now();
        let url = m.url.clone();
        let admin = m.admin.clone();
        let app = tokio::task::spawn_blocking(move || {
            // Submitting a million tasks takes longer than reqwest's default 30 s.
            let http = reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(600))
                .build()
                .unwrap();
            let v: serde_json::Value = http
                .post(format!("{url}/v1/apps"))
                .bearer_auth(&admin)
                .json(&array_app("sim", "/bin/false", tasks))
                .send()
                .unwrap()
                .json()
                .unwrap();
            let app = v["app"].as_u64().unwrap_or_else(|| panic!("submit: {v}"));
            let mut seen = 0;
            while seen < tasks {
                let v: serde_json::Value = http
                    .get(format!("{url}/v1/apps/{app}?wait_ms=30000&seen={seen}"))
                    .bearer_auth(&admin)
                    .send()
                    .unwrap()
                    .json()
                    .unwrap();
                seen = v["counts"]["done"].as_u64().unwrap();
            }
            app
        })
        .await
        .unwrap();
        let secs = t.elapsed().as_secs_f64();
        let pulls = stats.pulls.load(Ordering::Relaxed) - p0;
        let hbs = stats.heartbeats.load(Ordering::Relaxed) - hb1;
        let cpu = cpu_ms(m.child.id()) - cpu1;
        stats.recording.store(false, Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.abort();
        }
        (idle, per_agent_s, (app, secs, pulls, hbs, cpu))
    });
    let (app, secs, pulls, hbs, cpu) = work;
    let db = m.db();
    let lost: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM agents WHERE state = 'lost'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let releases: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND attempt > 1",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap();
    let mut lat = std::mem::take(&mut *stats.heartbeat_us.lock().unwrap());
    // CPU per pull: the work phase's CPU less its heartbeats' share at the idle rate.
    let per_pull = (cpu - hbs as f64 * idle_cpu_per_hb) / pulls.max(1) as f64;
    println!(
        "{agents},{register_s:.1},{idle_cpu_per_hb:.3},{idle_cpu_per_agent_s:.4},{tasks},{secs:.1},{:.0},{per_pull:.3},{hbs},{:.1},{:.1},{:.1},{},{lost},{releases},{},{}",
        tasks as f64 / secs,
        percentile(&mut lat, 0.5),
        percentile(&mut lat, 0.99),
        percentile(&mut lat, 1.0),
        stats.late_heartbeats.load(Ordering::Relaxed),
        stats.failed_calls.load(Ordering::Relaxed),
        stats.interval_ms.load(Ordering::Relaxed),
    );
}

/// Awaits every future (they run concurrently on the runtime).
async fn futures_join_all<F: std::future::Future + Send + 'static>(
    futs: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let counts: Vec<usize> = args
        .next()
        .map(|a| a.split(',').map(|n| n.parse().unwrap()).collect())
        .unwrap_or_else(|| vec![1000]);
    let task_ms: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    println!("agents,register_s,manager_cpu_ms_per_heartbeat,manager_cpu_ms_per_agent_per_s,tasks,run_s,tasks_per_s,manager_cpu_ms_per_pull,heartbeats,hb_p50_ms,hb_p99_ms,hb_max_ms,late_heartbeats,lost_agents,tasks_leased_again,failed_calls,heartbeat_interval_ms");
    for n in counts {
        run(n, task_ms);
    }
}
