//! Competing workflows through the whole control plane: a round plans them with the
//! configured workflow policy inside the cores the first level gives them, and leases
//! follow the plan (which workflow gets the cores, a moldable task's allocation).

use super::*;
use crate::test_apps::{agent_join, control_settings, control_with, workflow_app};
use hetpilot_protocol::dag::DagTask;

/// `n` independent 1-core tasks of `secs` each.
fn bag(name: &str, n: usize, secs: f64) -> AppSpec {
    workflow(
        name,
        vec![
            DagTask {
                runtime_secs: Some(secs),
                ..DagTask::default()
            };
            n
        ],
    )
}

fn workflow(name: &str, tasks: Vec<DagTask>) -> AppSpec {
    AppSpec {
        max_attempts: 1,
        ..workflow_app(name, name, tasks)
    }
}

fn control(workflows: &str, apps: Vec<AppSpec>, slots: u32) -> Control {
    let settings = ControlSettings {
        scheduler: SchedulerConfig {
            workflows: workflows.parse().unwrap(),
            ..SchedulerConfig::default()
        },
        ..control_settings()
    };
    let mut c = control_with(&settings, apps);
    c.agent_joined(agent_join(AgentId(10), "p", slots), 0);
    c
}

fn round(c: &mut Control, now_ms: u64) {
    let job = c.begin_round(&HashSet::new(), now_ms).unwrap();
    let warnings = c.finish_round(job.run());
    assert!(warnings.round.is_none(), "{:?}", warnings.round);
}

/// The applications of the tasks a lease of `slots` gives, and their cores.
fn lease(c: &mut Control, slots: u32, now_ms: u64) -> Vec<(u64, Option<u32>)> {
    let batch = c.lease(AgentId(10), slots, now_ms).unwrap();
    batch
        .tasks
        .iter()
        .map(|t| (t.task.app.0, t.cores))
        .collect()
}

/// A wide workflow (4 × 4 s, submitted first) and a short one (2 × 1 s) on 2 slots.
fn wide_and_short() -> Vec<AppSpec> {
    vec![bag("wide", 4, 4.0), bag("short", 2, 1.0)]
}

#[test]
fn round_robin_alternates_between_the_workflows() {
    let mut c = control("round-robin", wide_and_short(), 2);
    // No workflow policy: no waiting for a plan, the applications take turns.
    assert_eq!(lease(&mut c, 2, 10), vec![(1, Some(1)), (2, Some(1))]);
}

#[test]
fn cra_work_weight_gives_both_cores_to_the_short_workflow_first() {
    // CRA_WORK_WEIGHT on P = 2: priorities bl / C*²: wide 4 / 8² = 0.06, short 1 / 1² = 1,
    // so both cores go to the short workflow's two tasks at 0 (§4.3).
    let mut c = control("cra-work-weight", wide_and_short(), 2);
    assert!(
        lease(&mut c, 2, 10).is_empty(),
        "a workflow waits for the round that plans it"
    );
    round(&mut c, 20);
    assert_eq!(lease(&mut c, 2, 30), vec![(2, Some(1)), (2, Some(1))]);
}

#[test]
fn cafm_k_shelves_gives_both_cores_to_the_short_workflow_first() {
    // CAFM_K_SHELVES on P = 2: the short workflow's box (2 processors × 1 s) is in the
    // first shelf, the wide one's (2 × 8 s) after it.
    let mut c = control("cafm-k-shelves", wide_and_short(), 2);
    round(&mut c, 20);
    assert_eq!(lease(&mut c, 2, 30), vec![(2, Some(1)), (2, Some(1))]);
}

#[test]
fn a_workflow_never_planned_leaves_after_the_wait() {
    let mut c = control("cafm-k-shelves", wide_and_short(), 2);
    assert!(lease(&mut c, 2, 10).is_empty());
    // No round came (e.g. every round failed): past the wait, bottom level decides.
    assert_eq!(lease(&mut c, 2, crate::queue::PLAN_WAIT_MS).len(), 2);
}

#[test]
fn a_moldable_task_is_leased_with_its_hcpa_allocation() {
    // One task of 8 s on one core, perfectly parallel (α = 0), moldable from 1 to 3
    // cores; 4 free slots. HCPA grows it onto all 4 processors; its range caps it at 3.
    let moldable = DagTask {
        runtime_secs: Some(8.0),
        cores: Some(1),
        max_cores: Some(3),
        serial_fraction: Some(0.0),
        ..DagTask::default()
    };
    let rigid = DagTask {
        runtime_secs: Some(1.0),
        ..DagTask::default()
    };
    let mut c = control(
        "cra-work-weight",
        vec![workflow("m", vec![moldable, rigid])],
        4,
    );
    round(&mut c, 20);
    assert_eq!(lease(&mut c, 4, 30), vec![(1, Some(3)), (1, Some(1))]);
}

#[test]
fn a_round_that_plans_a_waiting_workflow_wakes_idle_agents_and_a_repeat_does_not() {
    let mut c = control("cafm-k-shelves", vec![bag("w", 4, 1.0)], 2);
    let submitted = c.take_effects().wake;
    assert!(submitted.work, "a submission wakes idle agents");
    assert_eq!(
        submitted.work_at_ms,
        Some(crate::queue::PLAN_WAIT_MS),
        "and again when its wait for a plan ends"
    );
    // Unplanned, the workflow's tasks wait for the round.
    assert!(lease(&mut c, 2, 1).is_empty());
    round(&mut c, 2);
    assert!(
        c.take_effects().wake.work,
        "the plan lets the idle agent lease"
    );
    round(&mut c, 3);
    let again = c.take_effects().wake;
    assert!(
        !again.work,
        "the same plan again leases nothing new: {again:?}"
    );
    assert_eq!(lease(&mut c, 2, 4).len(), 2);
}
