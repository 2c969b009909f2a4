//! Time from `hetpilot serve` with a queued application to its first task running on a lab
//! platform (run: `deploy/lab/start.sh`, then `cargo build --release --workspace --bins &&
//! cargo bench -p hetpilot-e2e --bench provision_first_task`).
//!
//! Each run: a manager without profiles accepts a one-task application and stops; then a
//! manager is started on the same data directory with the `lab-debug` profile (Slurm
//! partition `debug`, default `[provision]` settings), and the clock runs from spawning
//! `hetpilot serve` until the task's attempt has a start time in the database. Medians of 5.

use hetpilot_e2e::lab::{self, configure, start_manager};
use hetpilot_e2e::{array_app, wait_until, Manager};
use std::time::{Duration, Instant};

const RUNS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn one_run() -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let profile = lab::shipped_profile("lab-debug");
    // First: queue the application on a manager that provisions nothing.
    let env = configure(dir.path(), &[("lab-debug", &profile)], "");
    let config = dir.path().join("manager.toml");
    std::fs::write(&config, "[[platforms]]\nname = \"lab-debug\"\n").unwrap();
    let mut m = start_manager(dir.path(), &env);
    let app = m.submit(array_app("first-task", "true", 1));
    m.kill();
    // Then: serve with the profile, and time the first task's start.
    configure(dir.path(), &[("lab-debug", &profile)], "");
    let t0 = Instant::now();
    let m = start_manager(dir.path(), &env);
    let listening = t0.elapsed().as_secs_f64();
    let started = first_start(&m, app);
    let total = t0.elapsed().as_secs_f64();
    assert!(started, "the task started");
    (listening, total)
}

fn first_start(m: &Manager, app: u64) -> bool {
    wait_until("the first task to start", Duration::from_secs(120), || {
        let db = m.db();
        let n: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND started_ms IS NOT NULL",
                [app as i64],
                |r| r.get(0),
            )
            .unwrap_or(0);
        (n > 0).then_some(true)
    })
}

fn main() {
    let _lab = lab::require();
    let mut listening = Vec::new();
    let mut total = Vec::new();
    for i in 0..RUNS {
        let (l, t) = one_run();
        println!("run {i}: listening after {l:.3} s, first task running after {t:.3} s");
        listening.push(l);
        total.push(t);
    }
    println!(
        "serve -> first task running on lab-debug (Slurm): median {:.2} s (listening after {:.2} s), {RUNS} runs",
        median(total),
        median(listening)
    );
}
