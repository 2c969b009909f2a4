//! Competing workflows live under each workflow policy, beside the
//! simulator's prediction for the same workflows:
//! `cargo build --workspace --bins && cargo bench --profile dev -p hetpilot-e2e --bench
//! workflow_policies -- [RUNS [TIME_SCALE]]` (default 3 runs at time scale 0.05; the
//! profile must match the binaries').
//!
//! Settings, fixed before any run: the BLAST (small, 43 tasks) and Epigenomics (hep, 41
//! tasks) WfCommons instances and the Montage 25-task DAX of `samples/workflows/`, each
//! submitted with `--emulate --time-scale F --size-scale 0` (no file bytes: the policies
//! schedule cores, and the DAX reader declares a Montage `diff.txt` consumer with another
//! size than its producer writes, which a scaled size check refuses), all three before one
//! local agent of 4 slots starts (so they compete from its first pull). Per run, `C_i` is
//! workflow i's last task end minus the run's first task start; `C*_i` the median over
//! the runs of workflow i run alone the same way. Average stretch ΣC/ΣC*, maximum
//! stretch max C_i/C*_i and makespan max C_i, median over the runs, for `round-robin`
//! (the two-level scheduler and round-robin between applications, bottom level inside
//! each), `cra-work-weight` and `cafm-k-shelves`; beside them `hetpilot simulate
//! workflows` on 4 processors at the same time scale F.

use hetpilot_e2e::{bin, free_port, Manager};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The emulator's time scale: the second argument, else 0.05.
fn time_scale() -> String {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .nth(1)
        .unwrap_or_else(|| "0.05".into())
}
const SLOTS: u32 = 4;
const POLICIES: [&str; 3] = ["round-robin", "cra-work-weight", "cafm-k-shelves"];

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/workflows")
}

/// (submit flag, file) of the three workflows.
fn workflows() -> Vec<(&'static str, PathBuf)> {
    vec![
        (
            "--wfcommons",
            samples().join("blast-chameleon-small-001.json"),
        ),
        (
            "--wfcommons",
            samples().join("epigenomics-chameleon-hep-1seq-100k-001.json"),
        ),
        ("--dax", samples().join("Montage_25.xml")),
    ]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `which` workflows together under `policy` on one fresh agent; each one's
/// (first start, last end), epoch ms.
fn run(policy: &str, which: &[usize]) -> Vec<(u64, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        60.0,
        &[("HETPILOT_SCHEDULER__WORKFLOWS", policy)],
    );
    let all = workflows();
    let apps: Vec<u64> = which
        .iter()
        .map(|&w| {
            let (flag, path) = &all[w];
            let out = m.cli(&[
                "submit",
                flag,
                path.to_str().unwrap(),
                "--emulate",
                "--time-scale",
                &time_scale(),
                "--size-scale",
                "0",
                "--json",
            ]);
            assert!(out.status.success(), "{out:?}");
            serde_json::from_slice::<Value>(&out.stdout).unwrap()["app"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let _agent = m.agent("local", SLOTS, &[]);
    apps.iter()
        .map(|&app| {
            let s = m.wait_finished(app, Duration::from_secs(1800));
            assert_eq!(s["counts"]["failed"], 0, "{s}");
            let out = m.cli(&["tasks", &app.to_string(), "--json", "--limit", "100000"]);
            assert!(out.status.success(), "{out:?}");
            let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
            let first = rows.iter().filter_map(|t| t["started_ms"].as_u64()).min();
            let last = rows.iter().filter_map(|t| t["ended_ms"].as_u64()).max();
            (first.unwrap(), last.unwrap())
        })
        .collect()
}

/// `hetpilot simulate workflows` for the three workflows under `policy`.
fn simulated(policy: &str) -> Value {
    let mut cmd = Command::new(bin("hetpilot"));
    cmd.args(["simulate", "workflows", "--json", "--policy", policy])
        .args([
            "--processors",
            &SLOTS.to_string(),
            "--time-scale",
            &time_scale(),
        ]);
    for (_, path) in workflows() {
        cmd.arg(path);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(3);
    println!("{runs} runs at time scale {}", time_scale());
    let n = workflows().len();
    // C*_i: each workflow alone, median over the runs.
    let dedicated: Vec<f64> = (0..n)
        .map(|w| {
            median(
                (0..runs)
                    .map(|_| {
                        let r = run("round-robin", &[w])[0];
                        (r.1 - r.0) as f64 / 1000.0
                    })
                    .collect(),
            )
        })
        .collect();
    println!("alone (C*_i, s): {dedicated:.2?}");
    println!(
        "{:<16} {:>9} {:>9} {:>9} | {:>9} {:>9} {:>9} | per workflow C_i (s)",
        "policy", "avg str", "max str", "makespan", "sim avg", "sim max", "sim mksp"
    );
    for policy in POLICIES {
        let mut avg = Vec::new();
        let mut max = Vec::new();
        let mut makespan = Vec::new();
        let mut per: Vec<Vec<f64>> = vec![Vec::new(); n];
        for _ in 0..runs {
            let r = run(policy, &(0..n).collect::<Vec<_>>());
            let t0 = r.iter().map(|x| x.0).min().unwrap();
            let c: Vec<f64> = r.iter().map(|x| (x.1 - t0) as f64 / 1000.0).collect();
            avg.push(c.iter().sum::<f64>() / dedicated.iter().sum::<f64>());
            max.push(
                c.iter()
                    .zip(&dedicated)
                    .map(|(c, d)| c / d)
                    .fold(0.0, f64::max),
            );
            makespan.push(c.iter().copied().fold(0.0, f64::max));
            for (i, ci) in c.iter().enumerate() {
                per[i].push(*ci);
            }
        }
        let sim = (policy != "round-robin").then(|| simulated(policy));
        let s = |k: &str| {
            sim.as_ref().map_or("-".to_string(), |v| {
                format!("{:.2}", v[k].as_f64().unwrap())
            })
        };
        println!(
            "{policy:<16} {:>9.2} {:>9.2} {:>9.2} | {:>9} {:>9} {:>9} | {:.2?}",
            median(avg),
            median(max),
            median(makespan),
            s("average_stretch"),
            s("maximum_stretch"),
            s("makespan_s"),
            per.into_iter().map(median).collect::<Vec<_>>()
        );
        if let Some(v) = sim {
            let rows: Vec<String> = v["workflows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| {
                    format!(
                        "{}: C {:.2} C* {:.2}",
                        w["name"].as_str().unwrap(),
                        w["completion_s"].as_f64().unwrap(),
                        w["dedicated_s"].as_f64().unwrap()
                    )
                })
                .collect();
            println!("  simulated: {}", rows.join("; "));
        }
    }
}
