//! hetpilot side by side with HyperQueue's own `hq` CLI, on the same tasks in
//! one run. HyperQueue is built from its source at tag v0.26.2 (see BENCHMARKS.md); the
//! bench takes the binaries' paths:
//!
//! ```sh
//! cargo build --release --workspace --bins
//! HQ=/path/to/hq HQ_ZERO=/path/to/zero-worker/hq cargo bench -p hetpilot-e2e --bench vs_hyperqueue -- [quick]
//! ```
//!
//! - Throughput: N `/bin/true` tasks on one agent / one worker of S slots (CPUs), from the
//!   submit until the last task is recorded: `hq submit --array 1-N --stdout none
//!   --stderr none --wait -- /bin/true` against hetpilot's API submit and long poll;
//!   N = 10,000 (median of 3) and 100,000 (1 run; `quick` skips them), S = 2 and 16.
//! - Latency: one `/bin/true` task on an idle agent / worker, `hq submit --wait` against
//!   `hetpilot submit --wait` (both whole CLI processes), 100 runs each, after 5 warm-ups.
//! - Ceiling: 100,000 tasks that do not run, `hetpilot-agent --zero-work` (16 slots)
//!   against a zero-worker `hq` build (`RUSTFLAGS="--cfg zero_worker"`) with 16 and with
//!   1,024 CPUs (`-- ceiling` runs only these rows).

use hetpilot_e2e::{array_app, free_port, wait_until, Manager};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// An `hq` server and one worker of `cpus` CPUs in a private server directory.
struct Hq {
    hq: PathBuf,
    dir: tempfile::TempDir,
    server: Child,
    worker: Child,
}

impl Hq {
    fn start(hq: &Path, cpus: u32) -> Hq {
        let dir = tempfile::tempdir().unwrap();
        let server = Command::new(hq)
            .args(["server", "start", "--server-dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let hq_cmd = |args: &[&str]| {
            Command::new(hq)
                .args(args)
                .arg("--server-dir")
                .arg(dir.path())
                .output()
                .unwrap()
        };
        wait_until("the hq server", Duration::from_secs(30), || {
            hq_cmd(&["server", "info"]).status.success().then_some(())
        });
        let worker = Command::new(hq)
            .args([
                "worker",
                "start",
                "--cpus",
                &cpus.to_string(),
                "--server-dir",
            ])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until("the hq worker", Duration::from_secs(30), || {
            let out = hq_cmd(&["worker", "list", "--output-mode", "json"]);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
            (v.as_array()?.len() == 1).then_some(())
        });
        Hq {
            hq: hq.to_path_buf(),
            dir,
            server,
            worker,
        }
    }

    /// Seconds for `hq submit ... --wait` of `n` tasks.
    fn submit_wait(&self, n: u64) -> f64 {
        let t = Instant::now();
        let array = format!("1-{n}");
        let mut args = vec!["submit", "--wait"];
        if n > 1 {
            args.extend(["--array", &array]);
        }
        let out = Command::new(&self.hq)
            .args(&args)
            .args(["--stdout", "none", "--stderr", "none", "--server-dir"])
            .arg(self.dir.path())
            .args(["--", "/bin/true"])
            .output()
            .unwrap();
        let secs = t.elapsed().as_secs_f64();
        assert!(out.status.success(), "{out:?}");
        secs
    }
}

impl Drop for Hq {
    fn drop(&mut self) {
        let _ = Command::new(&self.hq)
            .args(["server", "stop", "--server-dir"])
            .arg(self.dir.path())
            .output();
        let _ = self.worker.kill();
        let _ = self.server.kill();
        let _ = self.worker.wait();
        let _ = self.server.wait();
    }
}

/// A manager that takes many submits (and zero-work agents), and one agent of `slots`.
fn manager(dir: &Path) -> Manager {
    let config = dir.join("hetpilot.toml");
    std::fs::write(
        &config,
        "allow_zero_work = true\n[limits]\nsubmit_burst = 100000\nsubmits_per_minute = 1000000\n",
    )
    .unwrap();
    Manager::start_on(
        dir,
        free_port(),
        30.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    )
}

/// Seconds from hetpilot's submit of `n` tasks until the last is recorded.
fn hetpilot_run(m: &Manager, n: u64, command: &str) -> f64 {
    let http = m.http();
    let t = Instant::now();
    let (s, b) = http.post("/v1/apps", &m.admin, &array_app("bench", command, n));
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    let mut seen = 0;
    while seen < n {
        let (s, v) = http.get(
            &format!("/v1/apps/{app}?wait_ms=30000&seen={seen}"),
            &m.admin,
        );
        assert_eq!(s, 200, "{v}");
        seen = v["counts"]["done"].as_u64().unwrap();
        assert_eq!(v["counts"]["failed"], 0, "{v}");
    }
    t.elapsed().as_secs_f64()
}

fn throughput(hq: &Path, n: u64, slots: u32, runs: usize) {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path());
        let _agent = m.agent("local", slots, &[]);
        ours.push(hetpilot_run(&m, n, "/bin/true"));
        drop(m);
        let h = Hq::start(hq, slots);
        theirs.push(h.submit_wait(n));
    }
    let (o, t) = (median(ours), median(theirs));
    println!("throughput,{n},{slots},{o:.2},{t:.2},{:.2},{runs}", t / o);
}

fn latency(hq: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let _agent = m.agent("local", 2, &[]);
    let h = Hq::start(hq, 2);
    for _ in 0..5 {
        m.one_task_submit_wait_ms();
        h.submit_wait(1);
    }
    let ours: Vec<f64> = (0..100).map(|_| m.one_task_submit_wait_ms()).collect();
    let theirs: Vec<f64> = (0..100).map(|_| h.submit_wait(1) * 1000.0).collect();
    println!(
        "latency_ms,1,2,{:.2},{:.2},{:.2},100 (p99 {:.2} vs {:.2})",
        median(ours.clone()),
        median(theirs.clone()),
        median(theirs.clone()) / median(ours.clone()),
        percentile(ours, 0.99),
        percentile(theirs, 0.99)
    );
}

/// Tasks per second of `n` tasks that do not run: hetpilot's zero-work agent of 16 slots
/// against a zero-worker `hq` worker of 16 CPUs, and of 1,024 (CPUs are notional for a
/// zero-worker; HyperQueue's own zero-worker runs use 128-CPU nodes).
fn ceiling(hq_zero: &Path, n: u64) {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let agent = m.agent("local", 16, &["--zero-work"]);
    let ours = hetpilot_run(&m, n, "/bin/true");
    drop(agent);
    drop(m);
    for cpus in [16, 1024] {
        let h = Hq::start(hq_zero, cpus);
        let theirs = h.submit_wait(n);
        println!(
            "zero_work_tasks_per_s,{n},{cpus},{:.0},{:.0},{:.2},1",
            n as f64 / ours,
            n as f64 / theirs,
            theirs / ours
        );
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let ceiling_only = std::env::args().any(|a| a == "ceiling");
    let Some(hq) = std::env::var_os("HQ").map(PathBuf::from) else {
        eprintln!("set HQ to the path of an `hq` binary (see BENCHMARKS.md for how to build it)");
        return;
    };
    println!("figure,tasks,slots,hetpilot,hyperqueue,hyperqueue_over_hetpilot,runs");
    if !ceiling_only {
        latency(&hq);
        let sizes: &[u64] = if quick { &[10_000] } else { &[10_000, 100_000] };
        for &n in sizes {
            for slots in [2, 16] {
                throughput(&hq, n, slots, if n >= 100_000 { 1 } else { 3 });
            }
        }
    }
    match std::env::var_os("HQ_ZERO") {
        Some(z) => ceiling(Path::new(&z), 100_000),
        None => eprintln!("HQ_ZERO not set: no zero-work vs zero-worker row"),
    }
}
