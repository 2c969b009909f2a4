//! A workflow's parallel task (`procs` on one `[[task]]`): it waits for its parents, is
//! leased only to a group of agents all at once (never to one agent by the workflow's own
//! lease path), holds every member until it reports, and releases its children after.

use super::*;
use crate::test_apps::{self, alice_entry, array_app};
use hetpilot_protocol::dag::{DagSpec, DagTask};
use hetpilot_protocol::parallel::HostSlots;
use hetpilot_protocol::protocol::{Assignment, TaskAttempt, TaskResult, TaskState};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::{AgentId, AppId};

/// `prep` → `sim` (`procs = 4`) → `post`.
fn pipeline() -> AppSpec {
    let task = |parents: Vec<u32>, procs: Option<u64>| DagTask {
        parents,
        runtime_secs: Some(1.0),
        procs,
        ..DagTask::default()
    };
    AppSpec {
        tasks: TaskSource::Lines(vec!["prep".into(), "sim".into(), "post".into()]),
        max_attempts: 1,
        timeout_secs: Some(10),
        dag: Some(DagSpec {
            tasks: vec![
                task(vec![], None),
                task(vec![0], Some(4)),
                task(vec![1], None),
            ],
        }),
        ..array_app("wf", 1)
    }
}

fn success(a: &Assignment) -> TaskResult {
    test_apps::success(a.task, a.attempt)
}

fn lease(q: &mut Queues, agent: u64, now_ms: u64) -> Vec<Assignment> {
    q.lease(AgentId(agent), 2, now_ms).unwrap().tasks
}

#[test]
fn a_workflows_parallel_task_runs_between_its_serial_ones_on_a_group_leased_at_once() {
    let spec = pipeline();
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec));
    for id in [1, 2] {
        q.insert_agent(AgentEntry::new(
            AgentId(id),
            "p".into(),
            format!("n{id}"),
            2,
            0,
        ));
    }
    // Only `prep` is ready: `sim` waits for it, whatever the agents ask.
    let got = lease(&mut q, 1, 1);
    let indices: Vec<u64> = got.iter().map(|a| a.task.index).collect();
    assert_eq!(indices, [0], "{got:?}");
    assert!(lease(&mut q, 2, 2).is_empty(), "nothing else is ready");
    q.apply_result(AgentId(1), success(&got[0]));

    // `sim` is leased to both agents at once: the puller is its head with a share of 2.
    let got = lease(&mut q, 2, 3);
    assert_eq!(got.len(), 1, "{got:?}");
    let sim = &got[0];
    assert_eq!((sim.task.index, sim.cores), (1, Some(2)));
    let host = |h: &str| HostSlots {
        host: h.into(),
        slots: 2,
    };
    assert_eq!(sim.hosts, [host("n2"), host("n1")]);
    assert_eq!(
        q.free_slots_of(AgentId(1)),
        Some(0),
        "the member's share is held"
    );
    assert_eq!(q.member_runs(AgentId(1)), [sim.task]);
    assert!(lease(&mut q, 1, 4).is_empty(), "`post` waits for `sim`");
    q.apply_result(AgentId(2), success(sim));

    // Its end frees both agents and releases `post`, a run on one agent.
    assert_eq!(q.free_slots_of(AgentId(1)), Some(2));
    assert!(q.member_runs(AgentId(1)).is_empty());
    let got = lease(&mut q, 1, 5);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].task.index, 2);
    assert!(got[0].hosts.is_empty());
    q.apply_result(AgentId(1), success(&got[0]));
    assert_eq!(q.app(AppId(1)).unwrap().counts.done, 3);
}

#[test]
fn a_workflows_parallel_task_is_never_leased_in_part_to_one_agent() {
    let mut spec = pipeline();
    // `sim` (4 processors) ready from the start beside `prep`, and one agent of 2 slots.
    spec.dag.as_mut().unwrap().tasks[1].parents.clear();
    spec.dag.as_mut().unwrap().tasks[2].parents = vec![0, 1];
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec));
    q.insert_agent(AgentEntry::new(AgentId(1), "p".into(), "n1".into(), 2, 0));
    let mut leased = Vec::new();
    for now_ms in 1..5 {
        for a in q.lease(AgentId(1), 2, now_ms).unwrap().tasks {
            leased.push(a.task.index);
            q.apply_result(AgentId(1), success(&a));
        }
    }
    assert_eq!(
        leased,
        [0],
        "only `prep`: `sim` needs two such agents at once"
    );
    assert_eq!(q.app(AppId(1)).unwrap().tasks[1].state, TaskState::Waiting);
}

#[test]
fn a_workflows_parallel_task_whose_member_is_lost_runs_again_whole_and_its_child_waits() {
    let mut spec = pipeline();
    spec.dag.as_mut().unwrap().tasks[1].parents.clear();
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec));
    for id in 1..=3 {
        q.insert_agent(AgentEntry::new(
            AgentId(id),
            "p".into(),
            format!("n{id}"),
            2,
            0,
        ));
    }
    let sim = lease(&mut q, 2, 1)
        .into_iter()
        .find(|a| a.task.index == 1)
        .expect("`sim` is ready and leased to a group headed by agent 2");
    let member = q.group_lease(sim.task).unwrap().members[1].agent;
    q.lose_agent(member, "killed", 5);
    let slot = *q.app(AppId(1)).unwrap().task(1).unwrap();
    assert_eq!((slot.state, slot.lost), (TaskState::Waiting, 1));
    assert!(q.group_lease(sim.task).is_none());
    assert!(q.member_runs(member).is_empty());
    // Back among the ready parallel tasks: retried whole, never on one agent alone.
    let head = [1, 2, 3]
        .into_iter()
        .find(|&a| AgentId(a) != member && q.free_slots_of(AgentId(a)) == Some(2))
        .unwrap();
    let again: Vec<Assignment> = lease(&mut q, head, 6)
        .into_iter()
        .filter(|a| a.task.index == 1)
        .collect();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!((again[0].attempt, again[0].hosts.len()), (2, 2));
    assert_eq!(q.app(AppId(1)).unwrap().tasks[2].state, TaskState::Waiting);
}

#[test]
fn a_restored_workflow_keeps_its_parallel_runs_group_and_releases_the_child_after_it() {
    let agents = |q: &mut Queues| {
        for id in [1, 2] {
            q.insert_agent(AgentEntry::new(
                AgentId(id),
                "p".into(),
                format!("n{id}"),
                2,
                0,
            ));
        }
    };
    let mut q = Queues::new(60_000);
    agents(&mut q);
    let spec = pipeline();
    q.insert_app(alice_entry(AppId(1), spec.clone()));
    let prep = lease(&mut q, 1, 1);
    q.apply_result(AgentId(1), success(&prep[0]));
    let sim = lease(&mut q, 1, 2).remove(0);
    let members = q.group_lease(sim.task).unwrap().members.clone();
    // As the store restores it: `prep` done, `sim` running on its head, then its group.
    let mut r = Queues::new(60_000);
    agents(&mut r);
    let slot = |state, attempt, agent| TaskSlot {
        state,
        attempt,
        lost: 0,
        agent,
        variant: None,
    };
    let tasks = vec![
        slot(TaskState::Done, 1, Some(AgentId(1))),
        slot(TaskState::Running, sim.attempt, Some(AgentId(1))),
        slot(TaskState::Waiting, 0, None),
    ];
    let app = AppEntry::restore(
        AppId(1),
        "alice".into(),
        spec.clone(),
        spec.validate().unwrap(),
        TaskInputs::Lines(vec!["prep".into(), "sim".into(), "post".into()]),
        0,
        tasks,
    )
    .unwrap();
    r.insert_app(app);
    r.reattach_leases(&Default::default());
    let at = TaskAttempt {
        task: sim.task,
        attempt: sim.attempt,
    };
    assert!(r.restore_groups(vec![(at, members)], 10).is_empty());
    assert_eq!(
        (r.free_slots_of(AgentId(1)), r.free_slots_of(AgentId(2))),
        (Some(0), Some(0))
    );
    assert!(
        lease(&mut r, 2, 11).is_empty(),
        "`post` waits, `sim` is not ready again"
    );
    r.apply_result(AgentId(1), success(&sim));
    assert_eq!(r.free_slots_of(AgentId(2)), Some(2));
    let post = lease(&mut r, 2, 12);
    assert_eq!(post.iter().map(|a| a.task.index).collect::<Vec<_>>(), [2]);
}
