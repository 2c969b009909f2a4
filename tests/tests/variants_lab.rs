//! Applications with a GPU and a CPU variant against the real local lab
//! (`deploy/lab/start.sh`): pilots on the GPU partition (node n5, two fake GPUs Slurm grants)
//! and on the CPU partitions `debug` and `small`. Each task runs once, a GPU-variant run only
//! on a GPU agent and bound to one of its devices; under PAF the application whose GPU
//! variant gains much gets more of the GPU runs than the one that gains little, whereas
//! first fit (`round-robin`) takes the first declared variant that fits. Each run prints
//! its figures (makespan, share of each application's tasks on a GPU, turnaround).
//!
//! Other engineers' jobs may hold lab nodes: pilots wait in Slurm's queue, and the waits
//! here are bounded generously.

use hetpilot_e2e::lab::{self, configure, start_tls_manager};
use hetpilot_e2e::Manager;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// The UUIDs the lab's fake `nvidia-smi` gives its two devices.
const LAB_GPUS: [&str; 2] = [
    "GPU-1ab0d000-0000-4000-8000-000000000000",
    "GPU-1ab0d000-0000-4000-8000-000000000001",
];

/// Tasks of each application.
const TASKS: u64 = 30;

/// Long enough for a pilot to wait behind another engineer's job in the lab's queue.
const PATIENCE: Duration = Duration::from_secs(1500);

/// Provisioning and scheduling settings of both runs; only `policy` differs. Idle agents
/// stay a minute so a GPU pilot is not drained between the two applications' phases.
fn settings(policy: &str) -> String {
    format!(
        "interval_secs = 1\nregister_timeout_secs = 300\nbackoff_base_secs = 2\n\
         backoff_max_secs = 30\nidle_timeout_secs = 60\n\
         [scheduler]\npolicy = \"{policy}\"\ninterval_ms = 500\n"
    )
}

/// An application of [`TASKS`] tasks whose GPU variant (1 GPU and 1 core, declared first)
/// records the devices it was bound to in `dir` and sleeps `gpu_s`, and whose CPU variant
/// (2 cores) sleeps `cpu_s`.
fn app(dir: &Path, name: &str, gpu_s: u32, cpu_s: u32) -> Value {
    let seen = dir.join(name);
    std::fs::create_dir_all(&seen).unwrap();
    let gpu = format!(
        "sh -c 'echo \"$CUDA_VISIBLE_DEVICES\" > {}/$HETPILOT_INDEX.gpu; sleep {gpu_s}'",
        seen.display()
    );
    json!({
        "name": name,
        "command": "true",
        "tasks": {"array": {"start": 0, "end": TASKS - 1}},
        "variants": [
            {"name": "gpu", "gpus": 1, "command": gpu},
            {"name": "cpu", "cores": 2, "command": format!("sleep {cpu_s}")},
        ],
    })
}

/// One run of an application as the store recorded it.
struct Run {
    index: i64,
    attempt: i64,
    outcome: Option<String>,
    variant: Option<String>,
    platform: String,
    ended_ms: Option<i64>,
}

fn runs(m: &Manager, app: u64) -> Vec<Run> {
    let db = m.db();
    let mut q = db
        .prepare(
            "SELECT t.idx, t.attempt, t.outcome, t.variant, a.platform, t.ended_ms
             FROM attempts t JOIN agents a ON a.id = t.agent_id
             WHERE t.app_id = ?1 ORDER BY t.idx, t.attempt",
        )
        .unwrap();
    q.query_map([app as i64], |r| {
        Ok(Run {
            index: r.get(0)?,
            attempt: r.get(1)?,
            outcome: r.get(2)?,
            variant: r.get(3)?,
            platform: r.get(4)?,
            ended_ms: r.get(5)?,
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn submitted_ms(m: &Manager, app: u64) -> i64 {
    m.db()
        .query_row(
            "SELECT submitted_ms FROM apps WHERE id = ?1",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap()
}

/// When each agent registered, seconds after `from_ms`, by platform: `lab-gpu +12.3 s`.
fn registrations(m: &Manager, from_ms: i64) -> String {
    let db = m.db();
    let mut q = db
        .prepare("SELECT platform, registered_ms FROM agents ORDER BY registered_ms")
        .unwrap();
    q.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .map(|(p, at)| format!("{p} +{:.1} s", (at - from_ms) as f64 / 1000.0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many of `app`'s runs were each variant on each platform: `gpu@lab-gpu 16, ...`.
fn placements(m: &Manager, app: u64) -> String {
    let mut counts = std::collections::BTreeMap::new();
    for r in runs(m, app) {
        let variant = r.variant.unwrap_or_default();
        *counts
            .entry(format!("{variant}@{}", r.platform))
            .or_insert(0) += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a run of both applications showed: per application, its GPU runs and its
/// turnaround (ms); and the makespan (ms).
struct Figures {
    gpu_runs: [usize; 2],
    turnaround_ms: [i64; 2],
    makespan_ms: i64,
}

/// Checks that every task of `app` ran once and succeeded, each GPU-variant run on the
/// GPU platform bound to one of its devices; returns its GPU runs and last end.
fn check(dir: &Path, m: &Manager, app: u64, name: &str) -> (usize, i64) {
    let runs = runs(m, app);
    let indices: Vec<i64> = runs.iter().map(|r| r.index).collect();
    assert_eq!(
        indices,
        (0..TASKS as i64).collect::<Vec<_>>(),
        "{name}: each task ran exactly once"
    );
    for r in &runs {
        assert_eq!(r.attempt, 1, "{name} task {} retried", r.index);
        assert_eq!(r.outcome.as_deref(), Some("success"), "{name} {}", r.index);
        match r.variant.as_deref() {
            Some("gpu") => {
                assert_eq!(r.platform, "lab-gpu", "{name} {} ran as gpu", r.index);
                let seen = dir.join(name).join(format!("{}.gpu", r.index));
                let devices = std::fs::read_to_string(&seen)
                    .unwrap_or_else(|e| panic!("{name} {}: no device record: {e}", r.index));
                assert!(
                    LAB_GPUS.contains(&devices.trim()),
                    "{name} {} was bound to {devices:?}, not one lab GPU",
                    r.index
                );
            }
            Some("cpu") => {
                let seen = dir.join(name).join(format!("{}.gpu", r.index));
                assert!(!seen.exists(), "{name} {} ran both variants", r.index);
            }
            other => panic!("{name} {} ran as {other:?}", r.index),
        }
    }
    let gpu = runs
        .iter()
        .filter(|r| r.variant.as_deref() == Some("gpu"))
        .count();
    let last = runs.iter().filter_map(|r| r.ended_ms).max().unwrap();
    (gpu, last)
}

/// Runs both applications under `policy` with pilots on lab-gpu, lab-debug and
/// lab-small, checks each, and prints and returns the figures.
fn run_both(policy: &str) -> Figures {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let profiles = ["lab-gpu", "lab-debug", "lab-small"].map(|p| (p, lab::shipped_profile(p)));
    let platforms: Vec<(&str, &Path)> = profiles.iter().map(|(n, p)| (*n, p.as_path())).collect();
    let env = configure(dir.path(), &platforms, &settings(policy));
    let m = start_tls_manager(dir.path(), &env);
    // `strong` gains 8x from a GPU, `slight` little; `slight` is submitted first, so first
    // fit gives it the GPUs whenever they are free.
    let slight = m.submit(app(dir.path(), "slight", 3, 4));
    let strong = m.submit(app(dir.path(), "strong", 1, 8));
    for app in [slight, strong] {
        let summary = m.wait_finished(app, PATIENCE);
        assert_eq!(summary["counts"]["done"], TASKS, "{summary}");
    }
    let (slight_gpu, slight_end) = check(dir.path(), &m, slight, "slight");
    let (strong_gpu, strong_end) = check(dir.path(), &m, strong, "strong");
    let (slight_from, strong_from) = (submitted_ms(&m, slight), submitted_ms(&m, strong));
    let figures = Figures {
        gpu_runs: [slight_gpu, strong_gpu],
        turnaround_ms: [slight_end - slight_from, strong_end - strong_from],
        makespan_ms: slight_end.max(strong_end) - slight_from.min(strong_from),
    };
    eprintln!(
        "{policy}: makespan {:.1} s; slight {}/{TASKS} on a GPU, turnaround {:.1} s; \
         strong {}/{TASKS} on a GPU, turnaround {:.1} s",
        figures.makespan_ms as f64 / 1000.0,
        figures.gpu_runs[0],
        figures.turnaround_ms[0] as f64 / 1000.0,
        figures.gpu_runs[1],
        figures.turnaround_ms[1] as f64 / 1000.0,
    );
    eprintln!(
        "{policy}: agents registered {}; slight ran {}; strong ran {}",
        registrations(&m, slight_from.min(strong_from)),
        placements(&m, slight),
        placements(&m, strong)
    );
    figures
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn under_paf_the_lab_gpus_go_mostly_to_the_application_that_gains_most() {
    let f = run_both("paf");
    assert!(
        f.gpu_runs[1] > f.gpu_runs[0],
        "the 8x application ran {} tasks on a GPU, the 1.3x one {}",
        f.gpu_runs[1],
        f.gpu_runs[0]
    );
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn first_fit_runs_every_variant_task_once_on_the_lab() {
    let f = run_both("round-robin");
    assert!(
        f.gpu_runs.iter().sum::<usize>() > 0,
        "first fit ran no task on the lab's GPUs"
    );
}
