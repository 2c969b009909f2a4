//! Workflow (DAG) figures, on a release build:
//! `cargo build --release --workspace --bins && cargo bench -p hetpilot-e2e --bench
//! workflow -- [PART...]` with PART among `submit`, `cpu`, `chain`, `replay`, `idle`
//! (default: all).
//!
//! - `submit`: a 100,000-task Montage-shaped DAG (25,000 mProject, 50,000 mDiffFit with
//!   two parents each, one mConcatFit over every mDiffFit, mBgModel, 24,995 mBackground,
//!   mImgtbl, mAdd, mShrink: 225,000 edges), timed two ways: `POST /v1/apps` of the
//!   prepared JSON until the manager answers (committed), and the whole `hetpilot submit
//!   --wfcommons FILE` process (read, check, send) on the same DAG as a WfFormat 1.5 file.
//!   Five runs each, median.
//! - `cpu`: the manager's CPU per task for 20,000 tasks on two `--zero-work` agents, as a
//!   bag of tasks and as a DAG of 200 layers × 100 tasks with two parents each; the
//!   difference per task is what dependency handling costs. Three runs each, median.
//! - `chain`: 100 `/bin/true` tasks, each the parent of the next, on one local agent:
//!   submit to the last one's committed end. This measures latency: each link is a
//!   result report, its commit, the child's release, and the agent's next pull.
//!   Three runs, median; with the one-task submit → done latency beside it.
//! - `replay`: the Montage (dss 0.5°), Epigenomics (hep) and BLAST (small) instances of
//!   `samples/workflows/` run with `--emulate --time-scale 0.1` on two local agents of
//!   4 slots each; the makespan (first start to last end) × 10 beside the recorded one.
//! - `idle`: every sample workflow (the three WfCommons instances and the Montage DAX) with
//!   `--emulate --time-scale 0.001 --size-scale 0.0001`, submitted by the CLI to two idle
//!   local agents of 4 slots each, fresh for each run: submit (the CLI process's start) to
//!   the first task's start, and to the last task's committed end. Five runs each, median
//!   and maximum: how long a researcher's workflow waits for agents that sit idle.

use hetpilot_e2e::proc_stats::cpu_ms;
use hetpilot_e2e::{free_port, wait_until, Manager};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// User + system CPU seconds of this process's waited-for children so far.
fn children_cpu_secs() -> f64 {
    // SAFETY: getrusage writes into the struct we pass and has no other precondition.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn manager(dir: &Path, zero_work: bool) -> Manager {
    let config = dir.join("hetpilot.toml");
    let mut text = String::from("[limits]\nsubmit_burst = 100000\nsubmits_per_minute = 1000000\n");
    if zero_work {
        text = format!("allow_zero_work = true\n{text}");
    }
    std::fs::write(&config, text).unwrap();
    Manager::start_on(
        dir,
        free_port(),
        60.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    )
}

/// Parents of the 100,000-task Montage shape, with the tasks' kinds as names.
fn montage_shape() -> (Vec<String>, Vec<Vec<u32>>) {
    const P: u32 = 25_000;
    const D: u32 = 50_000;
    const B: u32 = 24_995;
    let mut names = Vec::new();
    let mut parents: Vec<Vec<u32>> = Vec::new();
    for i in 0..P {
        names.push(format!("mProject_{i}"));
        parents.push(vec![]);
    }
    for k in 0..D {
        names.push(format!("mDiffFit_{k}"));
        let (a, b) = (k % P, (k * 7 + 1) % P);
        parents.push(if a == b { vec![a] } else { vec![a, b] });
    }
    let concat = names.len() as u32;
    names.push("mConcatFit".into());
    parents.push((P..P + D).collect());
    let model = names.len() as u32;
    names.push("mBgModel".into());
    parents.push(vec![concat]);
    let first_bg = names.len() as u32;
    for i in 0..B {
        names.push(format!("mBackground_{i}"));
        parents.push(vec![model, i]);
    }
    let imgtbl = names.len() as u32;
    names.push("mImgtbl".into());
    parents.push((first_bg..first_bg + B).collect());
    names.push("mAdd".into());
    parents.push(vec![imgtbl]);
    names.push("mShrink".into());
    parents.push(vec![imgtbl + 1]);
    assert_eq!(names.len(), 100_000);
    (names, parents)
}

fn dag_app(name: &str, names: &[String], parents: &[Vec<u32>]) -> Value {
    json!({
        "name": name,
        "command": "/bin/true",
        "tasks": {"lines": names},
        "dag": {"tasks": parents.iter().map(|p| json!({"parents": p})).collect::<Vec<_>>()},
    })
}

fn wfcommons_file(path: &Path, names: &[String], parents: &[Vec<u32>]) {
    let tasks: Vec<Value> = names
        .iter()
        .zip(parents)
        .map(|(n, ps)| {
            let ps: Vec<&str> = ps.iter().map(|&p| names[p as usize].as_str()).collect();
            json!({"name": n, "id": n, "parents": ps, "children": [],
                   "inputFiles": [], "outputFiles": []})
        })
        .collect();
    let exec: Vec<Value> = names
        .iter()
        .map(|n| {
            json!({"id": n, "runtimeInSeconds": 1.0,
                        "command": {"program": "/bin/true", "arguments": []}})
        })
        .collect();
    let doc = json!({"name": "montage-100k", "schemaVersion": "1.5",
        "workflow": {"specification": {"tasks": tasks, "files": []},
                     "execution": {"makespanInSeconds": 0, "executedAt": "", "tasks": exec}}});
    std::fs::write(path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

fn submit_part() {
    let (names, parents) = montage_shape();
    let edges: usize = parents.iter().map(Vec::len).sum();
    let body = dag_app("montage-100k", &names, &parents);
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path(), false);
    let http = m.http();
    let mut api = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let (s, b) = http.post("/v1/apps", &m.admin, &body);
        assert_eq!(s, 200, "{b}");
        api.push(t.elapsed().as_secs_f64());
        let app = b["app"].as_u64().unwrap();
        let (s, _) = http.post(&format!("/v1/apps/{app}/cancel"), &m.admin, &json!({}));
        assert_eq!(s, 200);
    }
    let file = dir.path().join("montage-100k.json");
    wfcommons_file(&file, &names, &parents);
    let mut cli = Vec::new();
    let mut cli_cpu = Vec::new();
    for _ in 0..5 {
        let cpu0 = children_cpu_secs();
        let t = Instant::now();
        let out = m.cli(&["submit", "--wfcommons", file.to_str().unwrap(), "--json"]);
        cli.push(t.elapsed().as_secs_f64());
        cli_cpu.push(children_cpu_secs() - cpu0);
        assert!(out.status.success(), "{out:?}");
    }
    println!(
        "submit 100,000-task DAG ({edges} edges): API median {:.3} s (runs {api:.3?}); \
         `hetpilot submit --wfcommons` ({:.1} MB file) median {:.3} s wall (runs {cli:.3?}), \
         {:.3} s of its CPU (runs {cli_cpu:.3?})",
        median(api.clone()),
        std::fs::metadata(&file).unwrap().len() as f64 / 1e6,
        median(cli.clone()),
        median(cli_cpu.clone()),
    );
}

/// Submits `body` and returns (manager CPU ms, seconds) until every task is done.
fn run_to_end(m: &Manager, body: &Value, n: u64) -> (f64, f64) {
    let http = m.http();
    let cpu0 = cpu_ms(m.child.id());
    let t = Instant::now();
    let (s, b) = http.post("/v1/apps", &m.admin, body);
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    let mut seen = 0;
    while seen < n {
        let (s, v) = http.get(
            &format!("/v1/apps/{app}?wait_ms=30000&seen={seen}"),
            &m.admin,
        );
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["counts"]["failed"], 0, "{v}");
        seen = v["counts"]["done"].as_u64().unwrap();
    }
    (cpu_ms(m.child.id()) - cpu0, t.elapsed().as_secs_f64())
}

fn cpu_part() {
    const LAYERS: u32 = 200;
    const WIDTH: u32 = 100;
    let n = LAYERS * WIDTH;
    let names: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
    let parents: Vec<Vec<u32>> = (0..n)
        .map(|i| {
            let (l, k) = (i / WIDTH, i % WIDTH);
            if l == 0 {
                vec![]
            } else {
                vec![(l - 1) * WIDTH + k, (l - 1) * WIDTH + (k + 1) % WIDTH]
            }
        })
        .collect();
    let dag = dag_app("layers", &names, &parents);
    let bag = json!({"name": "bag", "command": "/bin/true", "tasks": {"lines": names}});
    let mut rows = Vec::new();
    for (what, body) in [("bag", &bag), ("dag", &dag)] {
        let mut cpu = Vec::new();
        let mut secs = Vec::new();
        for _ in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let m = manager(dir.path(), true);
            let _agents: Vec<_> = (0..2)
                .map(|_| m.agent("local", 16, &["--zero-work"]))
                .collect();
            wait_until("the agents to register", Duration::from_secs(60), || {
                let (_, v) = m.http().get("/v1/agents", &m.admin);
                (v.as_array()?.len() == 2).then_some(())
            });
            let (c, s) = run_to_end(&m, body, u64::from(n));
            cpu.push(c / f64::from(n) * 1000.0);
            secs.push(s);
        }
        let (c, s) = (median(cpu.clone()), median(secs));
        println!("{what}: {n} tasks, manager CPU median {c:.1} µs/task (runs {cpu:.1?}), {s:.2} s");
        rows.push(c);
    }
    println!(
        "dependency handling: {:.1} µs of manager CPU per task ({:.2}× the bag's)",
        rows[1] - rows[0],
        rows[1] / rows[0]
    );
}

fn chain_part() {
    let n = 100u32;
    let names: Vec<String> = (0..n).map(|i| format!("link{i}")).collect();
    let parents: Vec<Vec<u32>> = (0..n)
        .map(|i| if i == 0 { vec![] } else { vec![i - 1] })
        .collect();
    let body = dag_app("chain", &names, &parents);
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path(), false);
    let _agent = m.agent("local", 2, &[]);
    for _ in 0..3 {
        m.one_task_submit_wait_ms();
    }
    let one: Vec<f64> = (0..10).map(|_| m.one_task_submit_wait_ms()).collect();
    let mut total = Vec::new();
    for _ in 0..3 {
        total.push(run_to_end(&m, &body, u64::from(n)).1);
    }
    let t = median(total.clone());
    println!(
        "chain of {n} dependent /bin/true tasks: median {t:.2} s end to end (runs {total:.2?}), \
         {:.1} ms per link; one task `submit --wait` median {:.1} ms",
        t * 1000.0 / f64::from(n),
        median(one)
    );
}

fn replay_part() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/workflows");
    for file in [
        "montage-chameleon-dss-05d-001.json",
        "epigenomics-chameleon-hep-1seq-100k-001.json",
        "blast-chameleon-small-001.json",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path(), false);
        let _agents: Vec<_> = (0..2).map(|_| m.agent("local", 4, &[])).collect();
        let path = samples.join(file);
        let recorded: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let recorded = recorded["workflow"]["execution"]["makespanInSeconds"]
            .as_f64()
            .unwrap();
        let out = m.cli(&[
            "submit",
            "--wfcommons",
            path.to_str().unwrap(),
            "--emulate",
            "--time-scale",
            "0.1",
            "--json",
        ]);
        assert!(out.status.success(), "{out:?}");
        let app = serde_json::from_slice::<Value>(&out.stdout).unwrap()["app"]
            .as_u64()
            .unwrap();
        let summary = m.wait_finished(app, Duration::from_secs(1800));
        assert_eq!(summary["counts"]["failed"], 0, "{summary}");
        let (s, report) = m.http().get(&format!("/v1/apps/{app}/report"), &m.admin);
        assert_eq!(s, 200, "{report}");
        let ours = report["makespan_ms"].as_f64().unwrap() / 1000.0;
        let cp = summary["workflow"]["critical_path_secs"].as_f64().unwrap();
        println!(
            "{file}: {} tasks, makespan {ours:.1} s at time scale 0.1 = {:.0} s at full \
             scale; recorded {recorded:.0} s; critical path {:.0} s; stretch vs critical \
             path {:.2}",
            summary["counts"]["done"],
            ours * 10.0,
            cp * 10.0,
            ours / cp
        );
    }
}

/// Milliseconds since the Unix epoch (the manager's clock, on the same host).
fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn idle_part() {
    const RUNS: usize = 5;
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/workflows");
    for (flag, file) in [
        ("--wfcommons", "montage-chameleon-dss-05d-001.json"),
        (
            "--wfcommons",
            "epigenomics-chameleon-hep-1seq-100k-001.json",
        ),
        ("--wfcommons", "blast-chameleon-small-001.json"),
        ("--dax", "Montage_25.xml"),
    ] {
        let (mut first, mut done) = (Vec::new(), Vec::new());
        let mut tasks = 0;
        for _ in 0..RUNS {
            let dir = tempfile::tempdir().unwrap();
            let m = manager(dir.path(), false);
            let _agents: Vec<_> = (0..2).map(|_| m.agent("local", 4, &[])).collect();
            wait_until("two agents to register", Duration::from_secs(30), || {
                let (_, agents) = m.http().get("/v1/agents", &m.admin);
                (agents.as_array()?.len() == 2).then_some(())
            });
            let path = samples.join(file);
            let submitted = unix_ms();
            let out = m.cli(&[
                "submit",
                flag,
                path.to_str().unwrap(),
                "--emulate",
                "--time-scale",
                "0.001",
                "--size-scale",
                "0.0001",
                "--json",
            ]);
            assert!(out.status.success(), "{out:?}");
            let app = serde_json::from_slice::<Value>(&out.stdout).unwrap()["app"]
                .as_u64()
                .unwrap();
            let summary = m.wait_finished(app, Duration::from_secs(600));
            assert_eq!(summary["counts"]["failed"], 0, "{summary}");
            tasks = summary["counts"]["done"].as_u64().unwrap();
            let (start, end): (i64, i64) = m
                .db()
                .query_row(
                    "SELECT MIN(started_ms), MAX(ended_ms) FROM attempts WHERE app_id = ?1",
                    [app as i64],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            first.push((start - submitted) as f64);
            done.push((end - submitted) as f64);
        }
        let max = |v: &[f64]| v.iter().cloned().fold(f64::MIN, f64::max);
        println!(
            "{file} ({tasks} tasks), idle agents, {RUNS} runs: submit to first start median              {:.0} ms (max {:.0}); submit to done median {:.0} ms (max {:.0})",
            median(first.clone()),
            max(&first),
            median(done.clone()),
            max(&done)
        );
    }
}

fn main() {
    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |p: &str| parts.is_empty() || parts.iter().any(|a| a == p);
    if want("submit") {
        submit_part();
    }
    if want("cpu") {
        cpu_part();
    }
    if want("chain") {
        chain_part();
    }
    if want("replay") {
        replay_part();
    }
    if want("idle") {
        idle_part();
    }
}
