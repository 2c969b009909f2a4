//! Benchmark: the provisioner's per-cycle cost with 1,000 tracked pilots on one platform —
//! the pure reconciler's decision (views built from the records, then `decide`) — and,
//! when the local lab is up (`SLURM_CONF` set, `squeue` on PATH), one real batched Slurm
//! poll of 1,000 job ids through the Slurm adapter (ids that are not live come back as
//! ended or vanished, which costs the adapter the same parsing work).
//!
//! Run: `cargo bench -p hetpilot-manager --bench provision_reconcile`. Medians of 21 runs.

use hetpilot::provision::adapter::{adapter_for, BatchJobId, JobState};
use hetpilot::provision::reconcile::{decide, Backoff, Caps, Input, PilotView, Policy};
use hetpilot::provision::{runner, AdapterKind, Login, PlatformProfile};
use hetpilot_protocol::pilots::PilotState;
use std::path::Path;
use std::time::Instant;

const PILOTS: usize = 1000;
const RUNS: usize = 21;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn job_states() -> Vec<(String, JobState)> {
    (0..PILOTS)
        .map(|i| {
            let state = match i % 10 {
                0 => JobState::Queued,
                1 => JobState::Ended {
                    exit_code: Some(0),
                    reason: "COMPLETED".into(),
                },
                _ => JobState::Running,
            };
            (format!("bench-p{i}"), state)
        })
        .collect()
}

fn reconcile_once(states: &[(String, JobState)]) -> f64 {
    let t = Instant::now();
    let views: Vec<PilotView<'_>> = states
        .iter()
        .enumerate()
        .map(|(i, (name, job))| PilotView {
            name,
            state: if i % 10 == 0 {
                PilotState::Queued
            } else {
                PilotState::Running
            },
            job: Some(job),
            submitted_ms: i as u64,
            job_started_ms: Some(i as u64),
            walltime_end_ms: Some(3_600_000 + i as u64 * 1000),
            agent_idle: i % 3 == 0,
            idle_since_ms: (i % 3 == 0).then_some(0),
            draining: false,
            agent_lost: false,
            agent_live: i % 10 != 0,
            drain_ordered: false,
            awaiting_exit_since: None,
        })
        .collect();
    let d = decide(&Input {
        now_ms: 1_000_000,
        demand_cores: 4000,
        caps: Caps {
            max_queued: 200,
            max_running: 1200,
            cores_per_pilot: 4,
        },
        policy: Policy {
            register_timeout_ms: 300_000,
            replace_lead_ms: 600_000,
            backoff_base_ms: 5000,
            backoff_max_ms: 600_000,
            idle_timeout_ms: 60_000,
        },
        backoff: Backoff::default(),
        pilots: &views,
    });
    let elapsed = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(d.transitions.len(), PILOTS / 10, "the ended tenth");
    elapsed
}

fn lab_profile() -> Option<PlatformProfile> {
    let conf = std::env::var("SLURM_CONF").ok()?;
    if !Path::new(&conf).exists() {
        return None;
    }
    let text = "name = \"bench\"\nadapter = \"slurm\"\nqueue = \"debug\"\ncores_per_node = 1\n\
                memory_per_node = \"1GB\"\nmax_walltime = \"1h\"\nagent_binary = \"/bin/true\"\n\
                work_dir = \"/tmp/hetpilot-bench\"\n";
    PlatformProfile::parse(text, Path::new("bench.toml")).ok()
}

fn main() {
    let states = job_states();
    let decide_ms: Vec<f64> = (0..RUNS).map(|_| reconcile_once(&states)).collect();
    println!(
        "reconciler, {PILOTS} tracked pilots: median {:.3} ms per cycle ({RUNS} runs)",
        median(decide_ms)
    );
    let Some(profile) = lab_profile() else {
        println!("squeue poll: skipped (the lab is not up: deploy/lab/start.sh, then . $HETPILOT_LAB/env.sh)");
        return;
    };
    let runner = runner::for_login(&Login::Local).expect("local runner");
    let adapter = adapter_for(AdapterKind::Slurm);
    // Real job ids: 1..=1000 below the lab's current counter are old or unknown jobs.
    let ids: Vec<BatchJobId> = (1..=PILOTS).map(|i| BatchJobId(i.to_string())).collect();
    let mut poll_ms = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let states = adapter
            .poll(runner.as_ref(), &profile, &ids)
            .expect("squeue poll");
        poll_ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(states.len(), PILOTS, "every id answered");
    }
    println!(
        "slurm adapter poll of {PILOTS} job ids (one batched call): median {:.1} ms ({RUNS} runs)",
        median(poll_ms)
    );
}
