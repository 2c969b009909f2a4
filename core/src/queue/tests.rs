//! Lease, report, loss and cancellation rules of the queues.

use super::*;
use crate::test_apps::{alice_entry, array_app, result};
use hetpilot_protocol::protocol::{Outcome, TaskState};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId, TaskRef};
use std::collections::HashMap;

fn app(id: u64, n: u64, max_attempts: u32) -> AppEntry {
    let spec = AppSpec {
        max_attempts,
        ..array_app(&format!("app{id}"), n)
    };
    alice_entry(AppId(id), spec)
}

fn queues(apps: &[(u64, u64)], agents: &[u64]) -> Queues {
    let mut q = Queues::new(1_000);
    for &(id, n) in apps {
        q.insert_app(app(id, n, 2));
    }
    for &a in agents {
        q.insert_agent(AgentEntry::new(
            AgentId(a),
            "local".into(),
            "h".into(),
            4,
            0,
        ));
    }
    q
}

fn state(q: &Queues, t: TaskRef) -> TaskState {
    q.app(t.app).unwrap().tasks[t.index as usize].state
}

#[test]
fn leases_round_robin_across_applications_and_renders_commands() {
    let mut q = queues(&[(1, 10), (2, 10)], &[1]);
    let batch = q.lease(AgentId(1), 4, 0).unwrap();
    let apps: Vec<u64> = batch.tasks.iter().map(|t| t.task.app.0).collect();
    assert_eq!(apps, [1, 2, 1, 2]);
    assert_eq!(batch.tasks[0].argv, ["run", "1"]);
    assert_eq!(batch.apps.len(), 2, "each app's runtime is sent once");
    let again = q.lease(AgentId(1), 2, 0).unwrap();
    assert!(again.apps.is_empty());
    assert_eq!(q.app(AppId(1)).unwrap().counts.leased, 3);
    assert_eq!(batch.changes.len(), 4);
}

#[test]
fn a_task_needing_more_cores_than_offered_is_skipped_not_split() {
    let mut q = queues(&[], &[1]);
    // Without reservations: a reserved wide task whose slots are free goes to a pull of
    // any size (see `reservations`).
    q.set_reservations(false);
    let mut big = app(1, 3, 1);
    big.runtime.cores = 3;
    q.insert_app(big);
    assert_eq!(q.lease(AgentId(1), 2, 0).unwrap().tasks.len(), 0);
    // Room for two in what the agent asks (slots + prefetch), but its 4 slots have room
    // for one 3-core task only: multi-core tasks go only where their cores are free.
    let first = q.lease(AgentId(1), 7, 0).unwrap().tasks;
    assert_eq!(first.len(), 1);
    assert_eq!(q.lease(AgentId(1), 7, 0).unwrap().tasks.len(), 0);
    q.apply_result(AgentId(1), result(first[0].task, 1, Outcome::Success));
    assert_eq!(q.lease(AgentId(1), 7, 0).unwrap().tasks.len(), 1);
}

#[test]
fn success_completes_and_failure_retries_until_max_attempts() {
    let mut q = queues(&[(1, 2)], &[1]);
    let b = q.lease(AgentId(1), 2, 0).unwrap();
    let (t0, t1) = (b.tasks[0].task, b.tasks[1].task);
    assert_eq!(
        q.check_result(AgentId(1), &result(t0, 1, Outcome::Success)),
        Ok(ReportCheck::Current)
    );
    q.apply_result(AgentId(1), result(t0, 1, Outcome::Success));
    assert_eq!(state(&q, t0), TaskState::Done);
    q.apply_result(AgentId(1), result(t1, 1, Outcome::Failed));
    assert_eq!(state(&q, t1), TaskState::Waiting);
    let b = q.lease(AgentId(1), 2, 0).unwrap();
    assert_eq!(b.tasks.len(), 1);
    assert_eq!(b.tasks[0].attempt, 2);
    q.apply_result(AgentId(1), result(t1, 2, Outcome::Failed));
    assert_eq!(state(&q, t1), TaskState::Failed, "max_attempts = 2 reached");
    assert!(!q.has_waiting());
}

/// Attempts lost to the infrastructure (a pilot killed under its agent, an agent lost)
/// are counted apart: with `max_attempts = 1` the task is leased again, and only a run
/// that ends with a failure uses up its attempt.
#[test]
fn attempts_lost_with_a_pilot_do_not_count_against_max_attempts() {
    let mut q = queues(&[], &[1, 2]);
    q.insert_app(app(1, 1, 1));
    let t = q.lease(AgentId(1), 1, 0).unwrap().tasks[0].task;
    let changes = q.lose_agent(AgentId(1), "its pilot's batch job was cancelled", 10);
    assert!(
        changes.iter().any(
            |c| matches!(c, Change::AttemptLost { reason, .. } if reason.contains("cancelled"))
        ),
        "{changes:?}"
    );
    assert_eq!(
        state(&q, t),
        TaskState::Waiting,
        "not failed: max_attempts untouched"
    );
    assert!(
        q.lose_agent(AgentId(1), "again", 20).is_empty(),
        "lost once"
    );
    let again = q.lease(AgentId(2), 1, 20).unwrap().tasks;
    assert_eq!(again[0].attempt, 2);
    let slot = q.app(AppId(1)).unwrap().tasks[0];
    assert_eq!((slot.lost, slot.counted_attempts()), (1, 1));
    assert_eq!(
        q.app(AppId(1)).unwrap().lost_attempts,
        1,
        "the application counts its lost attempts"
    );
    q.apply_result(AgentId(2), result(t, 2, Outcome::Failed));
    assert_eq!(
        state(&q, t),
        TaskState::Failed,
        "the one counted attempt failed"
    );
}

#[test]
fn silent_agents_lose_their_tasks_to_the_queue() {
    let mut q = queues(&[(1, 3)], &[1, 2]);
    q.lease(AgentId(1), 3, 0).unwrap();
    q.heartbeat(AgentId(2), 900).unwrap();
    assert!(q.expire(1_000).is_empty(), "not past the timeout yet");
    let changes = q.expire(1_500);
    assert_eq!(
        changes
            .iter()
            .filter(|c| matches!(c, Change::AttemptLost { .. }))
            .count(),
        3
    );
    assert_eq!(q.app(AppId(1)).unwrap().counts.waiting, 3);
    assert_eq!(
        q.heartbeat(AgentId(1), 1_600),
        Err(ReportError::AgentGone(AgentId(1)))
    );
    assert!(q.lease(AgentId(1), 1, 1_600).is_err());
    let b = q.lease(AgentId(2), 3, 1_600).unwrap();
    assert!(b.tasks.iter().all(|t| t.attempt == 2));
}

#[test]
fn a_late_success_completes_once_and_the_rerun_is_only_recorded() {
    let mut q = queues(&[(1, 1)], &[1, 2]);
    let t = q.lease(AgentId(1), 1, 0).unwrap().tasks[0].task;
    q.heartbeat(AgentId(2), 1_400).unwrap();
    q.expire(1_500);
    q.lease(AgentId(2), 1, 1_500).unwrap();
    let late = result(t, 1, Outcome::Success);
    assert_eq!(
        q.check_result(AgentId(1), &late),
        Ok(ReportCheck::NeedsHistory)
    );
    q.apply_result(AgentId(1), late);
    assert_eq!(state(&q, t), TaskState::Done);
    assert_eq!(
        q.agent(AgentId(2)).unwrap().kill.len(),
        1,
        "the redundant re-run is killed"
    );
    let changes = q.apply_result(AgentId(2), result(t, 2, Outcome::Success));
    assert_eq!(
        changes.len(),
        1,
        "only the run is recorded, no second completion"
    );
    assert_eq!(q.app(AppId(1)).unwrap().counts.done, 1);
}

#[test]
fn a_late_failure_does_not_fail_the_requeued_task() {
    let mut q = queues(&[(1, 1)], &[1]);
    let t = q.lease(AgentId(1), 1, 0).unwrap().tasks[0].task;
    q.expire(2_000);
    q.apply_result(AgentId(1), result(t, 1, Outcome::Failed));
    assert_eq!(state(&q, t), TaskState::Waiting);
}

#[test]
fn unknown_tasks_and_agents_are_refused() {
    let q = queues(&[(1, 1)], &[1]);
    let ghost = TaskRef {
        app: AppId(1),
        index: 5,
    };
    assert_eq!(
        q.check_result(AgentId(1), &result(ghost, 1, Outcome::Success)),
        Err(ReportError::UnknownTask(ghost))
    );
    let t = TaskRef {
        app: AppId(1),
        index: 0,
    };
    assert_eq!(
        q.check_result(AgentId(9), &result(t, 1, Outcome::Success)),
        Err(ReportError::UnknownAgent(AgentId(9)))
    );
    assert_eq!(
        q.check_result(AgentId(1), &result(t, 1, Outcome::Success)),
        Ok(ReportCheck::NeedsHistory)
    );
}

#[test]
fn cancel_ends_waiting_tasks_and_orders_kills_for_running_ones() {
    let mut q = queues(&[(1, 5)], &[1]);
    let b = q.lease(AgentId(1), 2, 0).unwrap();
    q.started(
        AgentId(1),
        &[hetpilot_protocol::protocol::TaskAttempt {
            task: b.tasks[0].task,
            attempt: 1,
        }],
        0,
    )
    .unwrap();
    q.cancel(AppId(1));
    let counts = q.app(AppId(1)).unwrap().counts;
    assert_eq!(counts.cancelled, 5);
    assert_eq!(q.heartbeat(AgentId(1), 1).unwrap().1.len(), 2);
    q.apply_result(AgentId(1), result(b.tasks[0].task, 1, Outcome::Signaled));
    assert_eq!(q.app(AppId(1)).unwrap().counts.cancelled, 5);
    assert!(q.lease(AgentId(1), 4, 1).unwrap().tasks.is_empty());
}

#[test]
fn draining_agents_get_no_tasks() {
    let mut q = queues(&[(1, 5)], &[1]);
    q.drain(AgentId(1));
    assert!(q.lease(AgentId(1), 4, 0).unwrap().tasks.is_empty());
    assert!(q.heartbeat(AgentId(1), 0).unwrap().0);
}

#[test]
fn restart_reattaches_held_tasks_to_their_agent() {
    let mut loaded = app(1, 3, 2);
    for slot in &mut loaded.tasks[..2] {
        slot.state = TaskState::Running;
        slot.attempt = 1;
        slot.agent = Some(AgentId(1));
    }
    let mut q = Queues::new(1_000);
    q.insert_app(loaded);
    q.insert_agent(AgentEntry::new(
        AgentId(1),
        "local".into(),
        "h".into(),
        4,
        0,
    ));
    q.reattach_leases(&HashMap::new());
    assert_eq!(q.agent(AgentId(1)).unwrap().held.len(), 2);
    assert_eq!(q.app(AppId(1)).unwrap().counts.running, 2);
    assert_eq!(q.app(AppId(1)).unwrap().counts.waiting, 1);
}

#[test]
fn leases_the_agent_never_received_go_back_but_newer_ones_stay() {
    use hetpilot_protocol::protocol::TaskAttempt;
    let mut q = queues(&[(1, 4)], &[1]);
    let first = q.lease(AgentId(1), 2, 100).unwrap();
    let second = q.lease(AgentId(1), 2, 200).unwrap();
    let held: Vec<TaskAttempt> = first.tasks[..1]
        .iter()
        .map(|a| TaskAttempt {
            task: a.task,
            attempt: a.attempt,
        })
        .collect();
    // The agent saw the first answer (lease 100) but not the second.
    let changes = q.reconcile(AgentId(1), first.lease_ms, &held, 250).unwrap();
    let lost: Vec<_> = changes
        .iter()
        .filter(|c| matches!(c, Change::AttemptLost { .. }))
        .collect();
    assert_eq!(
        lost.len(),
        1,
        "only the unheld lease of the first answer: {changes:?}"
    );
    assert_eq!(state(&q, first.tasks[1].task), TaskState::Waiting);
    assert_eq!(state(&q, first.tasks[0].task), TaskState::Leased);
    assert!(second
        .tasks
        .iter()
        .all(|a| state(&q, a.task) == TaskState::Leased));
    assert!(second.lease_ms >= first.lease_ms);
}

#[test]
fn lease_times_strictly_increase_even_within_one_millisecond() {
    let mut q = queues(&[(1, 4)], &[1]);
    let a = q.lease(AgentId(1), 1, 500).unwrap();
    let b = q.lease(AgentId(1), 1, 500).unwrap();
    assert!(b.lease_ms > a.lease_ms);
    // A heartbeat that saw only the first answer must not give back the second lease.
    let held = [hetpilot_protocol::protocol::TaskAttempt {
        task: a.tasks[0].task,
        attempt: 1,
    }];
    assert!(q
        .reconcile(AgentId(1), a.lease_ms, &held, 501)
        .unwrap()
        .is_empty());
}
