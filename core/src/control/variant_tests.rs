//! Variants through the whole control plane: the round measures each (application,
//! platform, variant), the variant first level gives the GPU to the application that gains
//! most from it, and leases hand out that variant's command, cores and GPU; the others run
//! their CPU variant. Before any round, leases take the first declared variant that fits.

use super::*;
use crate::test_apps::{agent_join, array_app, control_settings, gpu_and_cpu_variants, gpu_offer};
use hetpilot_protocol::protocol::{Measurements, Outcome, TaskResult};

const GPU_AGENT: AgentId = AgentId(1);
const CPU_AGENT: AgentId = AgentId(2);
/// Declared first, so first fit hands it the GPU.
const SLIGHT: AppId = AppId(1);
/// Ten times faster on the GPU.
const STRONG: AppId = AppId(2);

fn app(name: &str, n: u64) -> AppSpec {
    AppSpec {
        max_attempts: 1,
        variants: gpu_and_cpu_variants(),
        ..array_app(name, n)
    }
}

fn settings() -> ControlSettings {
    ControlSettings {
        scheduler: SchedulerConfig {
            policy: "paf".parse().expect("a policy"),
            ..SchedulerConfig::default()
        },
        ..control_settings()
    }
}

fn join(c: &mut Control, agent: AgentId, platform: &str, gpus: u32) {
    let join = AgentJoin {
        hostname: platform.into(),
        memory_mb: 1024,
        resources: gpu_offer(gpus),
        ..agent_join(agent, platform, 4)
    };
    c.agent_joined(join, 0);
}

/// A control plane with both applications submitted and both agents joined.
fn control() -> Control {
    let mut c = Control::new(&settings(), Measured::default()).unwrap();
    join(&mut c, GPU_AGENT, "gpu", 1);
    join(&mut c, CPU_AGENT, "cpu", 0);
    for (id, name) in [(SLIGHT, "slight"), (STRONG, "strong")] {
        let spec = app(name, 40);
        let template = spec.validate().unwrap();
        c.submit(id, format!("owner-{name}"), spec, template, 0);
    }
    c
}

/// Leases to `agent` and reports every leased run as succeeded after the tenths of a
/// second `runtime(app, variant)` says (runs shorter than the lease's clock slack, so the
/// report is not clamped); returns the (application, variant) of each lease.
fn run_once(
    c: &mut Control,
    agent: AgentId,
    now_ms: u64,
    runtime: impl Fn(AppId, &str) -> f64,
) -> Vec<(AppId, String)> {
    let batch = c.lease(agent, 4, now_ms).unwrap();
    let leased: Vec<(AppId, String)> = batch
        .tasks
        .iter()
        .zip(&batch.variants)
        .map(|(t, v)| (t.task.app, v.clone().expect("a variant")))
        .collect();
    let results: Vec<TaskResult> = batch
        .tasks
        .iter()
        .zip(&leased)
        .map(|(t, (app, v))| {
            let at = TaskAttempt {
                task: t.task,
                attempt: t.attempt,
            };
            let measured = Measurements {
                wall_ms: runtime(*app, v) * 100.0,
                ..Measurements::default()
            };
            TaskResult::without_output(at, Outcome::Success, measured, None)
        })
        .collect();
    let recorded = c.record_report(agent, results, &ReportHistory::new(), now_ms + 1);
    assert!(matches!(recorded, Ok(ReportAnswer::Recorded { .. })));
    leased
}

fn round(c: &mut Control, now_ms: u64) {
    let job = c.begin_round(&HashSet::new(), now_ms).unwrap();
    let warnings = c.finish_round(job.run());
    assert!(warnings.round.is_none(), "{:?}", warnings.round);
}

#[test]
fn before_any_round_the_first_declared_variant_that_fits_is_leased() {
    let mut c = control();
    let batch = c.lease(GPU_AGENT, 4, 10).unwrap();
    // The first application's GPU variant takes the one GPU and one core; the rest of the
    // node's cores go to CPU variants (2 cores each) of whoever comes next.
    let first = &batch.tasks[0];
    assert_eq!(first.task.app, SLIGHT);
    assert_eq!(batch.variants[0].as_deref(), Some("gpu"));
    assert_eq!(first.argv, vec!["gpu-run", "1"]);
    assert_eq!(first.cores, Some(1));
    assert_eq!(first.resources.gpus.len(), 1);
    assert!(batch.variants[1..]
        .iter()
        .all(|v| v.as_deref() == Some("cpu")));
    assert!(batch.tasks[1..]
        .iter()
        .all(|t| t.cores == Some(2) && t.argv[0] == "run" && t.resources.is_empty()));
    assert_eq!(c.queues().free_slots_of(GPU_AGENT), Some(1));
}

#[test]
fn measured_affinity_gives_the_gpu_to_the_application_that_gains_most() {
    let mut c = control();
    // The strong application's GPU variant is 10 times faster than its CPU one; the
    // slight one's barely faster.
    let runtime = |app: AppId, variant: &str| match (app, variant) {
        (STRONG, "gpu") => 1.0,
        (SLIGHT, "gpu") => 9.0,
        _ => 10.0,
    };
    let mut now = 1_000;
    // Rounds and leases until every (platform, variant) pair was explored.
    for _ in 0..12 {
        round(&mut c, now);
        run_once(&mut c, GPU_AGENT, now + 10, runtime);
        run_once(&mut c, CPU_AGENT, now + 20, runtime);
        now += 1_000;
    }
    round(&mut c, now);
    let mut on_gpu = Vec::new();
    for _ in 0..4 {
        for (app, variant) in run_once(&mut c, GPU_AGENT, now + 10, runtime) {
            if variant == "gpu" {
                on_gpu.push(app);
            }
        }
        run_once(&mut c, CPU_AGENT, now + 20, runtime);
        now += 1_000;
    }
    assert!(!on_gpu.is_empty(), "the GPU idled");
    assert!(
        on_gpu.iter().all(|&a| a == STRONG),
        "the GPU went to {on_gpu:?}, not only to the application it speeds up 10x"
    );
}

#[test]
fn the_variant_a_lease_chose_is_journaled_and_replays() {
    let mut c = control();
    c.start_journal(&settings());
    round(&mut c, 1_000);
    let batch = c.lease(GPU_AGENT, 4, 1_010).unwrap();
    assert!(!batch.tasks.is_empty());
    let journal = c.take_journal();
    let leased = journal
        .iter()
        .find_map(|e| match &e.output {
            Some(Output::LeasedAs(tasks)) => Some(tasks.clone()),
            _ => None,
        })
        .expect("a lease with variants is journaled with them");
    assert_eq!(leased.len(), batch.tasks.len());
    assert!(leased
        .iter()
        .zip(&batch.variants)
        .all(|((_, journaled), leased)| journaled == leased));
}

#[test]
fn variant_runtimes_the_store_measured_steer_the_first_round_after_a_restart() {
    let run = |app: AppId, agent: AgentId, variant: &str, wall_s: f64| Run {
        app,
        agent,
        outcome: Outcome::Success,
        wall_ms: wall_s * 1000.0,
        started_ms: 0,
        co_runners: vec![],
        transfers: vec![],
        device_co_runners: None,
        variant: Some(variant.into()),
    };
    let mut runs = Vec::new();
    for _ in 0..2 {
        for (app, gpu_s) in [(SLIGHT, 9.0), (STRONG, 1.0)] {
            runs.push(run(app, GPU_AGENT, "gpu", gpu_s));
            runs.push(run(app, GPU_AGENT, "cpu", 10.0));
            runs.push(run(app, CPU_AGENT, "cpu", 10.0));
        }
    }
    let agent = |agent, platform: &str| AgentResources {
        agent,
        platform: platform.into(),
        slots: 4,
        memory_mb: 1024,
    };
    let measured = Measured {
        agents: vec![agent(GPU_AGENT, "gpu"), agent(CPU_AGENT, "cpu")],
        runs,
        ..Measured::default()
    };
    let mut c = Control::new(&settings(), measured).unwrap();
    join(&mut c, GPU_AGENT, "gpu", 1);
    join(&mut c, CPU_AGENT, "cpu", 0);
    for (id, name) in [(SLIGHT, "slight"), (STRONG, "strong")] {
        let spec = app(name, 40);
        let template = spec.validate().unwrap();
        c.submit(id, format!("owner-{name}"), spec, template, 0);
    }
    round(&mut c, 1_000);
    // Everything measured twice: no exploration, the plan alone decides the first lease.
    let batch = c.lease(GPU_AGENT, 4, 1_010).unwrap();
    let on_gpu: Vec<AppId> = batch
        .tasks
        .iter()
        .zip(&batch.variants)
        .filter(|(_, v)| v.as_deref() == Some("gpu"))
        .map(|(t, _)| t.task.app)
        .collect();
    assert_eq!(on_gpu, [STRONG], "{:?}", batch.variants);
}
