//! Dispatch and submission figures (run: `cargo build --release --workspace
//! --bins && cargo bench -p hetpilot-e2e --bench dispatch`; `-- quick` for 10k only).
//!
//! - Dispatch: N `/bin/true` tasks through one agent of S slots, from submission until the
//!   last completion is recorded, against the raw ceiling `seq N | xargs -P S -n1 /bin/true`
//!   measured in the same run; CPU of the manager and agent processes per task (the
//!   agent's with its spawn helper's, `hetpilot-spawn`, which starts the tasks).
//! - Submit: 1,000,000 tasks with `hetpilot submit --each-line`, timed to the committed
//!   answer, and the manager's RSS with them queued.

use hetpilot_e2e::proc_stats::{cpu_ms, rss_mib};
use hetpilot_e2e::{array_app, Manager};
use std::process::Command;
use std::time::{Duration, Instant};

/// CPU of the agent `pid` and of its spawn helper (its child named `hetpilot-spawn`).
fn agent_cpu_ms(pid: u32) -> f64 {
    let helpers: f64 = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                let (name, rest) = stat.split_once(") ").unwrap_or_default();
                let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
                name.ends_with("(hetpilot-spawn") && ppid == Some(pid)
            })
        })
        .map(cpu_ms)
        .sum();
    cpu_ms(pid) + helpers
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn ceiling(n: u64, slots: u32) -> f64 {
    let t = Instant::now();
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("seq {n} | xargs -P {slots} -n1 /bin/true"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    t.elapsed().as_secs_f64()
}

struct Run {
    secs: f64,
    manager_cpu_ms_per_task: f64,
    agent_cpu_ms_per_task: f64,
}

fn dispatch(n: u64, slots: u32) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let agent = m.agent("local", slots, &[]);
    let (m0, a0) = (cpu_ms(m.child.id()), agent_cpu_ms(agent.child.id()));
    let t = Instant::now();
    let app = m.submit(array_app("true", "/bin/true", n));
    let s = m.wait_finished(app, Duration::from_secs(3600));
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(s["counts"]["done"], n);
    Run {
        secs,
        manager_cpu_ms_per_task: (cpu_ms(m.child.id()) - m0) / n as f64,
        agent_cpu_ms_per_task: (agent_cpu_ms(agent.child.id()) - a0) / n as f64,
    }
}

fn submit_million() {
    let n = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let input = dir.path().join("lines.txt");
    let text: String = (0..n).map(|i| format!("sample-{i:07}.dat\n")).collect();
    std::fs::write(&input, text).unwrap();
    let t = Instant::now();
    let o = m.cli(&[
        "submit",
        "--each-line",
        input.to_str().unwrap(),
        "--",
        "process",
        "{}",
    ]);
    let secs = t.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let queued = m.http().get("/v1/apps/1", &m.admin).1["counts"]["waiting"]
        .as_u64()
        .unwrap();
    assert_eq!(queued, n);
    let stored: i64 = m
        .db()
        .query_row("SELECT COUNT(*) FROM tasks WHERE app_id = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(stored, n as i64);
    println!(
        "submit,{n},{secs:.2},rss_mib={:.0},peak_rss_mib={:.0}",
        rss_mib(m.child.id(), "VmRSS:"),
        rss_mib(m.child.id(), "VmHWM:")
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    println!("figure,tasks,slots,ceiling_s,hetpilot_s,ratio,manager_cpu_ms_per_task,agent_cpu_ms_per_task,runs");
    let sizes: &[u64] = if quick { &[10_000] } else { &[10_000, 100_000] };
    for &n in sizes {
        for slots in [2u32, 16] {
            let runs = if n >= 100_000 { 1 } else { 3 };
            let mut ceil = Vec::new();
            let mut ours = Vec::new();
            let (mut mcpu, mut acpu) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                ceil.push(ceiling(n, slots));
                let r = dispatch(n, slots);
                ours.push(r.secs);
                mcpu.push(r.manager_cpu_ms_per_task);
                acpu.push(r.agent_cpu_ms_per_task);
            }
            let (c, o) = (median(ceil), median(ours));
            println!(
                "dispatch,{n},{slots},{c:.2},{o:.2},{:.3},{:.3},{:.3},{runs}",
                c / o,
                median(mcpu),
                median(acpu)
            );
        }
    }
    submit_million();
}
