//! One-task latency: a `/bin/true` task from submission to its committed end on
//! an idle local agent, measured two ways on a release build
//! (`cargo build --release --workspace --bins && cargo bench -p hetpilot-e2e --bench
//! latency -- [RUNS]`):
//!
//! - `hetpilot submit --wait --array 0-0 -- /bin/true`: the whole CLI process, as a user
//!   runs it (process start, submit, the manager's long poll, exit);
//! - through the API from a kept-alive client: `POST /v1/apps`, then
//!   `GET /v1/apps/ID?wait_ms=..&seen=0` until the task has ended.
//!
//! Each run is one application; medians and p99 over the runs, after 5 warm-up runs.

use hetpilot_e2e::{array_app, Manager};
use std::time::Instant;

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let k = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[k]
}

fn api_once(m: &Manager, http: &hetpilot_e2e::Http) -> f64 {
    let t = Instant::now();
    let (s, b) = http.post("/v1/apps", &m.admin, &array_app("one", "/bin/true", 1));
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    loop {
        let (s, v) = http.get(&format!("/v1/apps/{app}?wait_ms=10000&seen=0"), &m.admin);
        assert_eq!(s, 200, "{v}");
        if v["counts"]["done"] == 1 {
            return t.elapsed().as_secs_f64() * 1000.0;
        }
        assert_eq!(v["counts"]["failed"], 0, "{v}");
    }
}

fn report(what: &str, mut v: Vec<f64>) {
    let median = percentile(&mut v, 0.5);
    let p99 = percentile(&mut v, 0.99);
    let max = percentile(&mut v, 1.0);
    println!(
        "{what}: {} runs, median {median:.2} ms, p99 {p99:.2} ms, max {max:.2} ms",
        v.len()
    );
}

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    // One submit per run: past the default per-user rate limit.
    let config = dir.path().join("hetpilot.toml");
    std::fs::write(
        &config,
        "[limits]\nsubmit_burst = 100000\nsubmits_per_minute = 1000000\n",
    )
    .unwrap();
    let m = Manager::start_on(
        dir.path(),
        hetpilot_e2e::free_port(),
        30.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    let _agent = m.agent("local", 2, &[]);
    let http = m.http();
    for _ in 0..5 {
        api_once(&m, &http);
        m.one_task_submit_wait_ms();
    }
    let api: Vec<f64> = (0..runs).map(|_| api_once(&m, &http)).collect();
    let cli: Vec<f64> = (0..runs).map(|_| m.one_task_submit_wait_ms()).collect();
    report("API submit → done (kept-alive client)", api);
    report("hetpilot submit --wait (CLI process)", cli);
}
