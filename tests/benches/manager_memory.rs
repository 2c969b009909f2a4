//! The manager's memory per live and per ended task, against a real manager (the
//! workspace's `hetpilot` binary of the bench's profile: `cargo build --bins` first): RSS
//! before and after submitting an application of N tasks (`HETPILOT_MEASURE_TASKS`,
//! default 200,000), after cancelling it, after forgetting it, and after each of C more
//! submit-cancel-forget cycles (`HETPILOT_MEASURE_CYCLES`, default 8).
//!
//! `cargo build --bins && cargo test -p hetpilot-e2e --bench manager_memory` (debug build;
//! `cargo bench` runs it on the release build once `cargo build --release --bins` has run)

use hetpilot_e2e::{array_app, proc_stats, wait_until, Manager};
use serde_json::json;
use std::time::Duration;

fn main() {
    let setting = |name: &str, default: u64| -> u64 {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let n = setting("HETPILOT_MEASURE_TASKS", 200_000).max(1);
    let cycles = setting("HETPILOT_MEASURE_CYCLES", 8).max(1);
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let pid = m.child.id();
    let rss = || proc_stats::rss_mib(pid, "VmRSS:") * 1024.0 * 1024.0;
    let per_task = |after: f64, before: f64| (after - before) / n as f64;
    // A first cycle warms the allocator and the store's caches up.
    let churn = |name: &str| {
        let app = m.submit(array_app(name, "true", n));
        let (s, b) = http.post(&format!("/v1/apps/{app}/cancel"), &m.admin, &json!({}));
        assert_eq!(s, 200, "{b}");
        let (s, b) = http.post(&format!("/v1/apps/{app}/forget"), &m.admin, &json!({}));
        assert_eq!(s, 200, "{b}");
    };
    churn("warm-up");
    let base = rss();
    let app = m.submit(array_app("live", "true", n));
    let live = rss();
    let (s, b) = http.post(&format!("/v1/apps/{app}/cancel"), &m.admin, &json!({}));
    assert_eq!(s, 200, "{b}");
    let ended = rss();
    let (s, b) = http.post(&format!("/v1/apps/{app}/forget"), &m.admin, &json!({}));
    assert_eq!(s, 200, "{b}");
    let forgotten = rss();
    println!("tasks per application: {n}");
    println!("manager RSS before: {:.1} MiB", base / 1048576.0);
    println!(
        "live task:  {:.1} bytes (RSS {:.1} MiB)",
        per_task(live, base),
        live / 1048576.0
    );
    println!(
        "ended task: {:.1} bytes (RSS {:.1} MiB after cancelling)",
        per_task(ended, base),
        ended / 1048576.0
    );
    println!(
        "forgotten:  {:.1} bytes (RSS {:.1} MiB after forgetting)",
        per_task(forgotten, base),
        forgotten / 1048576.0
    );
    let mut after_cycles = forgotten;
    for i in 1..=cycles {
        churn(&format!("cycle{i}"));
        after_cycles = rss();
        println!("after cycle {i}: RSS {:.1} MiB", after_cycles / 1048576.0);
    }
    wait_until("the store to settle", Duration::from_secs(60), || {
        m.db()
            .query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get::<_, i64>(0))
            .ok()
            .filter(|rows| *rows == 0)
    });
    let db_bytes = std::fs::metadata(dir.path().join("hetpilot.db"))
        .map(|md| md.len())
        .unwrap_or(0);
    // The allocator keeps what a forgotten application freed and reuses it (once per
    // arena of the threads that serve submits): what matters is that cycles stop adding.
    println!(
        "each further submit-cancel-forget cycle: {:.1} bytes per task on average (RSS \
         {:.1} MiB after {cycles}); database file {:.1} MiB",
        per_task(after_cycles, forgotten) / cycles as f64,
        after_cycles / 1048576.0,
        db_bytes as f64 / 1048576.0
    );
}
