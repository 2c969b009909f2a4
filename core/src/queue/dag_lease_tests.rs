//! Per-task cores of workflow tasks: each reserves its own, within the agent's free slots,
//! and the agent is told; measured runs refine what remains to plan.

use super::*;
use crate::test_apps::{alice_entry, success, workflow_app};
use hetpilot_protocol::dag::DagTask;
use hetpilot_protocol::protocol::{Measurements, TaskResult};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId, TaskRef};

/// Independent tasks with `(cores, runtime)` each; the application's cores the widest.
fn workflow(tasks: &[(u32, f64)]) -> AppSpec {
    let dag = tasks
        .iter()
        .map(|&(c, r)| DagTask {
            cores: Some(c),
            runtime_secs: Some(r),
            ..DagTask::default()
        })
        .collect();
    AppSpec {
        cores: tasks.iter().map(|t| t.0).max().unwrap_or(1),
        max_attempts: 1,
        ..workflow_app("wf", "t", dag)
    }
}

fn queues(spec: AppSpec, slots: u32) -> Queues {
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec));
    q.insert_agent(AgentEntry::new(
        AgentId(1),
        "p".into(),
        "h".into(),
        slots,
        0,
    ));
    q
}

/// (index, cores) of what a lease asking for `ask` slots gives.
fn lease(q: &mut Queues, ask: u32) -> Vec<(u64, Option<u32>)> {
    let b = q.lease(AgentId(1), ask, 0).unwrap();
    b.tasks.iter().map(|t| (t.task.index, t.cores)).collect()
}

fn succeed(q: &mut Queues, index: u64, wall_secs: f64) {
    q.apply_result(
        AgentId(1),
        TaskResult {
            measurements: Measurements {
                wall_ms: wall_secs * 1000.0,
                ..Measurements::default()
            },
            ..success(
                TaskRef {
                    app: AppId(1),
                    index,
                },
                1,
            )
        },
    );
}

#[test]
fn each_task_reserves_its_own_cores_within_the_free_slots() {
    // Bottom levels order them: t0 (2 cores, 9 s), t1 and t2 (1 core, 5 s and 4 s).
    let mut q = queues(workflow(&[(2, 9.0), (1, 5.0), (1, 4.0)]), 2);
    assert_eq!(lease(&mut q, 8), vec![(0, Some(2))], "t0 fills both slots");
    assert!(lease(&mut q, 8).is_empty(), "no free slot");
    succeed(&mut q, 0, 9.0);
    assert_eq!(
        lease(&mut q, 8),
        vec![(1, Some(1)), (2, Some(1))],
        "two 1-core tasks side by side on 2 slots"
    );
}

#[test]
fn a_wide_task_waits_in_its_turn_for_free_slots() {
    // t0 (1 core) runs; t1 (2 cores, the highest bottom level left) cannot fit in the one
    // free slot, and t2 (1 core) does not pass it: the order holds.
    let mut q = queues(workflow(&[(1, 20.0), (2, 9.0), (1, 1.0)]), 2);
    assert_eq!(lease(&mut q, 1), vec![(0, Some(1))]);
    assert_eq!(
        lease(&mut q, 8),
        vec![],
        "t1 is first in line and does not fit"
    );
    succeed(&mut q, 0, 20.0);
    assert_eq!(lease(&mut q, 8), vec![(1, Some(2))]);
    assert_eq!(
        q.agent(AgentId(1)).unwrap().held.len(),
        1,
        "t1 holds both slots"
    );
}

#[test]
fn measured_runs_scale_what_remains() {
    let mut q = queues(workflow(&[(1, 10.0), (1, 10.0), (1, 10.0)]), 1);
    assert_eq!(lease(&mut q, 1), vec![(0, Some(1))]);
    succeed(&mut q, 0, 30.0);
    let app = q.app(AppId(1)).unwrap();
    let g = app
        .dag
        .as_ref()
        .unwrap()
        .remaining_graph(app.task_slots())
        .unwrap();
    let secs: Vec<f64> = g.tasks().iter().map(|t| t.sequential_seconds).collect();
    assert_eq!(
        secs,
        vec![0.0, 30.0, 30.0],
        "done: free; the rest ran 3× slower"
    );
}
