//! The workflow lab replay: the Montage (2MASS dss 0.5°), Epigenomics (hep) and BLAST
//! (small) instances of `samples/workflows/` replayed with `--emulate` on pilots the
//! manager submits to the local lab (`sudo deploy/lab/start.sh`, then
//! `. /var/tmp/hetpilot-lab/env.sh`):
//! `cargo build --workspace --bins && cargo bench -p hetpilot-e2e --bench workflow_lab --
//! [PLATFORM...]` with PLATFORM among `slurm` (profile lab-debug: `sbatch`, partition
//! `debug`, one node of 8 CPUs), `pbs` (lab-pbs: the PBS `qsub -l select=1:ncpus=8`
//! wrapper on the same node) and `torque` (lab-torque: `qsub -l nodes=2:ppn=2`, two nodes
//! of 2 CPUs); default `slurm pbs`.
//!
//! Settings, fixed before any run: `--time-scale 0.05 --size-scale 0.01` (a recorded
//! runtime of 100 s burns 5 s of wall clock; the files are a hundredth of their recorded
//! sizes, external inputs included); one run per instance and platform, each with a fresh
//! manager whose pilot is submitted once the workflow is. Printed per run, at full scale
//! (÷ 0.05): the makespan (first task start to last task end, `hetpilot report`), the time
//! from the submission to the last end (with the pilot's queueing and start-up), and the
//! lower bound at the pilot's slot count P: max(critical path, total work / P) of the
//! recorded runtimes. The recorded makespan is the instance's own.

use hetpilot_e2e::lab::{self, configure, start_manager};
use hetpilot_e2e::Manager;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The runtime factor of every replay.
const TIME_SCALE: f64 = 0.05;
/// The file-size factor of every replay.
const SIZE_SCALE: f64 = 0.01;
/// The instances, in `samples/workflows/`.
const INSTANCES: [&str; 3] = [
    "montage-chameleon-dss-05d-001.json",
    "epigenomics-chameleon-hep-1seq-100k-001.json",
    "blast-chameleon-small-001.json",
];
const FAST: &str = "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 2\nbackoff_max_secs = 30";

/// (part name, profile, slots of one pilot)
const PLATFORMS: [(&str, &str, f64); 3] = [
    ("slurm", "lab-debug", 8.0),
    ("pbs", "lab-pbs", 8.0),
    ("torque", "lab-torque", 4.0),
];

/// Recorded makespan, total work and critical path (seconds) of an instance.
fn recorded(instance: &Value) -> (f64, f64, f64) {
    let w = &instance["workflow"];
    let runtime: std::collections::HashMap<&str, f64> = w["execution"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap(),
                t["runtimeInSeconds"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    let tasks = w["specification"]["tasks"].as_array().unwrap();
    // Longest path ending at each task, parents first (the file lists tasks in any order).
    let mut finish: std::collections::HashMap<&str, f64> = std::collections::HashMap::new();
    while finish.len() < tasks.len() {
        for t in tasks {
            let id = t["id"].as_str().unwrap();
            if finish.contains_key(id) {
                continue;
            }
            let parents: Option<Vec<f64>> = t["parents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| finish.get(p.as_str().unwrap()).copied())
                .collect();
            if let Some(p) = parents {
                let start = p.into_iter().fold(0.0, f64::max);
                finish.insert(id, start + runtime.get(id).copied().unwrap_or(0.0));
            }
        }
    }
    let work: f64 = runtime.values().sum();
    let cp = finish.values().copied().fold(0.0, f64::max);
    (
        w["execution"]["makespanInSeconds"].as_f64().unwrap(),
        work,
        cp,
    )
}

fn replay(m: &Manager, path: &Path) -> (Value, Value, f64) {
    let submitted = Instant::now();
    let out = m.cli(&[
        "submit",
        "--wfcommons",
        path.to_str().unwrap(),
        "--emulate",
        "--time-scale",
        &TIME_SCALE.to_string(),
        "--size-scale",
        &SIZE_SCALE.to_string(),
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let app = serde_json::from_slice::<Value>(&out.stdout).unwrap()["app"]
        .as_u64()
        .unwrap();
    let summary = m.wait_finished(app, Duration::from_secs(1800));
    let to_end = submitted.elapsed().as_secs_f64();
    assert_eq!(summary["counts"]["failed"], 0, "{summary}");
    let (s, report) = m.http().get(&format!("/v1/apps/{app}/report"), &m.admin);
    assert_eq!(s, 200, "{report}");
    (summary, report, to_end)
}

fn run(part: &str, profile: &str, slots: f64) {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/workflows");
    for file in INSTANCES {
        let dir = tempfile::tempdir().unwrap();
        let cancel = lab::CancelOnDrop(dir.path().to_path_buf());
        let env = configure(
            dir.path(),
            &[(profile, &lab::shipped_profile(profile))],
            FAST,
        );
        let m = start_manager(dir.path(), &env);
        let path = samples.join(file);
        let instance: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let (recorded_makespan, work, cp) = recorded(&instance);
        let (summary, report, to_end) = replay(&m, &path);
        let ours = report["makespan_ms"].as_f64().unwrap() / 1000.0 / TIME_SCALE;
        let bound = cp.max(work / slots);
        let (s, agents) = m.http().get("/v1/agents", &m.admin);
        assert_eq!(s, 200, "{agents}");
        let agent_slots: Vec<u64> = agents
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["slots"].as_u64().unwrap_or(0))
            .collect();
        println!(
            "{part} ({profile}, {slots} slots) {file}: {} tasks done; makespan {ours:.0} s at \
             full scale ({:.1} s at time scale {TIME_SCALE}); submit to last end {:.0} s; \
             recorded {recorded_makespan:.0} s; critical path {cp:.0} s; work {work:.0} s; \
             lower bound at {slots} slots {bound:.0} s; ours / bound {:.2}; agents' slots \
             {agent_slots:?}",
            summary["counts"]["done"],
            ours * TIME_SCALE,
            to_end / TIME_SCALE,
            ours / bound,
        );
        drop(m);
        drop(cancel);
    }
}

fn main() {
    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let _lab = lab::require();
    for (part, profile, slots) in PLATFORMS {
        let default = part != "torque";
        if (parts.is_empty() && default) || parts.iter().any(|a| a == part) {
            run(part, profile, slots);
        }
    }
}
