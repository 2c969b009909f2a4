//! Workflow rules of the queues: parents first, bottom-level order, failures cancel
//! descendants, affinity to the parents' agent, and rebuilding from stored states.

use super::*;
use crate::test_apps::{alice_entry, result, workflow_app};
use hetpilot_protocol::dag::DagTask;
use hetpilot_protocol::protocol::{Outcome, TaskState};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId, TaskRef};

/// A workflow whose task `i` is named `t{i}`, with `parents[i]` and `runtimes[i]`.
fn workflow(parents: &[&[u32]], runtimes: &[f64], max_attempts: u32) -> AppSpec {
    let tasks = parents
        .iter()
        .zip(runtimes)
        .map(|(p, r)| DagTask {
            parents: p.to_vec(),
            runtime_secs: Some(*r),
            ..DagTask::default()
        })
        .collect();
    AppSpec {
        max_attempts,
        ..workflow_app("wf", "t", tasks)
    }
}

fn queues_with(spec: AppSpec, agents: &[u64]) -> Queues {
    let mut q = Queues::new(1_000);
    q.insert_app(alice_entry(AppId(1), spec));
    for &a in agents {
        q.insert_agent(AgentEntry::new(
            AgentId(a),
            "local".into(),
            "h".into(),
            8,
            0,
        ));
    }
    q
}

fn done(q: &mut Queues, agent: u64, index: u64, attempt: u32, outcome: Outcome) -> Vec<Change> {
    let task = TaskRef {
        app: AppId(1),
        index,
    };
    q.apply_result(AgentId(agent), result(task, attempt, outcome))
}

fn leased(q: &mut Queues, agent: u64, slots: u32) -> Vec<u64> {
    let batch = q.lease(AgentId(agent), slots, 0).unwrap();
    batch.tasks.iter().map(|a| a.task.index).collect()
}

fn state(q: &Queues, index: u64) -> TaskState {
    q.app(AppId(1)).unwrap().tasks[index as usize].state
}

#[test]
fn a_child_is_leased_only_after_all_its_parents_succeeded() {
    // Diamond: 0 -> {1, 2} -> 3.
    let mut q = queues_with(workflow(&[&[], &[0], &[0], &[1, 2]], &[1.0; 4], 2), &[1]);
    let app = q.app(AppId(1)).unwrap();
    assert_eq!(
        (app.ready_count(), app.dag.as_ref().unwrap().blocked()),
        (1, 3)
    );
    assert_eq!(leased(&mut q, 1, 8), [0]);
    assert!(
        leased(&mut q, 1, 8).is_empty(),
        "children wait for their parent"
    );
    done(&mut q, 1, 0, 1, Outcome::Success);
    let mut middle = leased(&mut q, 1, 8);
    middle.sort();
    assert_eq!(middle, [1, 2]);
    done(&mut q, 1, 1, 1, Outcome::Success);
    assert!(leased(&mut q, 1, 8).is_empty(), "3 still waits for 2");
    done(&mut q, 1, 2, 1, Outcome::Success);
    assert_eq!(leased(&mut q, 1, 8), [3]);
    assert_eq!(q.app(AppId(1)).unwrap().ready_count(), 0);
}

#[test]
fn ready_tasks_leave_by_bottom_level() {
    // Three roots: 0 (a long chain below it), 1 (alone, longer itself), 2 (short).
    // Bottom levels: 0 -> 1 + 10 = 11, 1 -> 5, 2 -> 1, 3 -> 10.
    let spec = workflow(&[&[], &[], &[], &[0]], &[1.0, 5.0, 1.0, 10.0], 2);
    let mut q = queues_with(spec, &[1]);
    assert_eq!(leased(&mut q, 1, 1), [0]);
    assert_eq!(leased(&mut q, 1, 1), [1]);
    assert_eq!(leased(&mut q, 1, 1), [2]);
}

#[test]
fn a_task_failing_for_good_cancels_its_descendants_only() {
    // 0 -> 1 -> 2, and 3 independent; 1 may run twice.
    let spec = workflow(&[&[], &[0], &[1], &[]], &[1.0; 4], 2);
    let mut q = queues_with(spec, &[1]);
    let mut first = leased(&mut q, 1, 8);
    first.sort();
    assert_eq!(first, [0, 3]);
    done(&mut q, 1, 0, 1, Outcome::Success);
    assert_eq!(leased(&mut q, 1, 8), [1]);
    let changes = done(&mut q, 1, 1, 1, Outcome::Failed);
    assert_eq!(state(&q, 1), TaskState::Waiting, "a retry first");
    assert!(!changes.iter().any(|c| matches!(
        c,
        Change::TaskState {
            state: TaskState::Cancelled,
            ..
        }
    )));
    assert_eq!(leased(&mut q, 1, 8), [1]);
    let changes = done(&mut q, 1, 1, 2, Outcome::Failed);
    assert_eq!(state(&q, 1), TaskState::Failed);
    assert_eq!(state(&q, 2), TaskState::Cancelled);
    assert_eq!(state(&q, 3), TaskState::Leased, "an unrelated task goes on");
    assert!(changes.iter().any(|c| matches!(
        c,
        Change::TaskState { task, state: TaskState::Cancelled, .. } if task.index == 2
    )));
    let app = q.app(AppId(1)).unwrap();
    let dag = app.dag.as_ref().unwrap();
    assert_eq!(
        dag.failed_ancestors(&app.tasks),
        [None, None, Some(1), None]
    );
    assert_eq!(dag.blocked(), 0);
    assert_eq!(app.counts.waiting, 0);
}

#[test]
fn a_child_prefers_the_agent_that_ran_its_parents() {
    // Two roots, each with one child; equal bottom levels.
    let spec = workflow(&[&[], &[], &[0], &[1]], &[1.0; 4], 2);
    let mut q = queues_with(spec, &[1, 2]);
    assert_eq!(leased(&mut q, 1, 1), [0]);
    assert_eq!(leased(&mut q, 2, 1), [1]);
    done(&mut q, 1, 0, 1, Outcome::Success);
    done(&mut q, 2, 1, 1, Outcome::Success);
    // Without affinity agent 2 would get 2 (lowest index first).
    assert_eq!(leased(&mut q, 2, 1), [3]);
    assert_eq!(leased(&mut q, 1, 1), [2]);
}

#[test]
fn the_dependency_state_is_rebuilt_from_stored_task_states() {
    let spec = workflow(&[&[], &[0], &[0], &[1, 2]], &[1.0; 4], 2);
    let template = spec.validate().unwrap();
    let slot = |state| TaskSlot {
        lost: 0,
        state,
        attempt: u32::from(state != TaskState::Waiting),
        agent: (state != TaskState::Waiting).then_some(AgentId(1)),
        variant: None,
    };
    let tasks = vec![
        slot(TaskState::Done),
        slot(TaskState::Running),
        slot(TaskState::Waiting),
        slot(TaskState::Waiting),
    ];
    let lines = TaskInputs::Lines((0..4).map(|i| format!("t{i}").into()).collect());
    let app = AppEntry::restore(
        AppId(1),
        "alice".into(),
        spec.clone(),
        template.clone(),
        lines.clone(),
        0,
        tasks,
    )
    .unwrap();
    assert_eq!(
        app.ready_count(),
        1,
        "task 2 is ready, task 3 waits for 1 and 2"
    );
    assert_eq!(app.dag.as_ref().unwrap().blocked(), 1);
    // A stored workflow that does not fit its tasks is refused, not a panic.
    let mut broken = spec;
    broken.dag.as_mut().unwrap().tasks[0].parents = vec![3];
    let cyclic = AppEntry::restore(
        AppId(1),
        "alice".into(),
        broken,
        template,
        lines,
        0,
        vec![slot(TaskState::Waiting); 4],
    );
    assert!(cyclic.unwrap_err().contains("cycle"));
}

#[test]
fn cancelling_a_workflow_empties_its_queue() {
    let mut q = queues_with(workflow(&[&[], &[0]], &[1.0; 2], 2), &[1]);
    q.cancel(AppId(1));
    assert!(leased(&mut q, 1, 8).is_empty());
    assert_eq!(q.app(AppId(1)).unwrap().ready_count(), 0);
}
