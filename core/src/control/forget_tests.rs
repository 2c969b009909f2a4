//! Ended applications through the whole control plane: when they end is noted, forgetting
//! one removes it from the queues, the agents and the profiles but not its owner's usage,
//! and results still coming for it are dropped.

use super::*;
use crate::queue::Change;
use crate::queue::{ForgetError, OwnerTasks, ReportError};
use crate::test_apps::{self, agent_join, array_app, control_settings};
use hetpilot_protocol::protocol::{Measurements, TaskResult};
use hetpilot_protocol::spec::TaskSource;
use hetpilot_protocol::TaskRef;

fn array(name: &str, n: u64) -> AppSpec {
    AppSpec {
        tasks: TaskSource::Array {
            start: 0,
            end: n - 1,
        },
        max_attempts: 1,
        ..array_app(name, 1)
    }
}

const AGENT: AgentId = AgentId(10);

/// Records `results` of [`AGENT`]'s current leases; the changes that made.
fn record_current(c: &mut Control, results: Vec<TaskResult>, now_ms: u64) -> Vec<Change> {
    let _before = c.take_effects();
    match c.record_report(AGENT, results, &ReportHistory::new(), now_ms) {
        Ok(ReportAnswer::Recorded { .. }) => c.take_effects().changes,
        other => panic!("{other:?}"),
    }
}

/// A control plane with one 4-slot agent and, per `(owner, tasks)`, an application
/// numbered from 1.
fn control(apps: &[(&str, u64)]) -> Control {
    let mut c = Control::new(&control_settings(), Measured::default()).unwrap();
    for (i, (owner, n)) in apps.iter().enumerate() {
        let spec = array(&format!("app{i}"), *n);
        let template = spec.validate().unwrap();
        c.submit(AppId(i as u64 + 1), owner.to_string(), spec, template, 0);
    }
    c.agent_joined(agent_join(AGENT, "p", 4), 0);
    c
}

fn success(task: TaskRef, attempt: u32, wall_ms: f64) -> TaskResult {
    TaskResult {
        measurements: Measurements {
            wall_ms,
            started_at_ms: 1_000,
            ended_at_ms: 1_000 + wall_ms as u64,
            ..Measurements::default()
        },
        ..test_apps::success(task, attempt)
    }
}

fn usage_of(c: &Control, user: &str) -> f64 {
    c.usage_table(Some(user), 2_000)
        .into_iter()
        .find(|u| u.user == user)
        .map_or(0.0, |u| u.usage)
}

#[test]
fn a_cancelled_application_ends_then_is_forgotten_everywhere_but_in_its_owners_usage() {
    let mut c = control(&[("alice", 3)]);
    let app = AppId(1);
    let batch = c.lease(AGENT, 1, 100).unwrap();
    assert_eq!(batch.tasks.len(), 1);
    assert_eq!(batch.apps.len(), 1, "the agent was sent the application");
    let done = success(batch.tasks[0].task, 1, 1_000.0);
    record_current(&mut c, vec![done], 500);
    assert!(
        c.queues().app(app).unwrap().ended_ms.is_none(),
        "still live"
    );
    assert_eq!(c.forget(app), Err(ForgetError::Live { app, unfinished: 2 }));
    let used = usage_of(&c, "alice");
    assert!(used > 0.0, "the run was charged");

    let _before = c.take_effects();
    assert!(c.cancel(app, 5_000));
    let changes = c.take_effects().changes;
    assert!(
        changes.contains(&Change::AppEnded { app, now_ms: 5_000 }),
        "{changes:?}"
    );
    assert_eq!(c.queues().app(app).unwrap().ended_ms, Some(5_000));
    assert!(!c.cancel(app, 6_000), "a second cancel changes nothing");
    assert!(c.take_effects().changes.is_empty());

    let forgotten = c.forget(app).unwrap();
    assert_eq!((forgotten.owner.as_str(), forgotten.tasks), ("alice", 3));
    let carried = forgotten.carried.expect("its run cost something");
    assert_eq!(carried.user, "alice");
    assert_eq!(carried.usage.raw, used);
    assert!(c.queues().app(app).is_none());
    assert_eq!(c.queues().apps().count(), 0);
    assert!(!c.queues().agent(AGENT).unwrap().sent_apps.contains(&app));
    assert_eq!(c.policy.stats.samples(app, "p"), 0, "its profile is gone");
    assert_eq!(usage_of(&c, "alice"), used, "its owner's usage stays");
    assert_eq!(c.queues().owner_tasks("alice"), OwnerTasks::default());
    assert_eq!(c.forget(app), Err(ForgetError::Unknown(app)));
}

#[test]
fn results_and_heartbeats_for_a_forgotten_application_are_dropped_without_panicking() {
    let mut c = control(&[("alice", 2), ("bob", 1)]);
    let batch = c.lease(AGENT, 3, 100).unwrap();
    assert_eq!(batch.tasks.len(), 3);
    let alices: Vec<TaskRef> = batch
        .tasks
        .iter()
        .map(|t| t.task)
        .filter(|t| t.app == AppId(1))
        .collect();
    c.cancel(AppId(1), 200);
    let held_before = c.queues().agent(AGENT).unwrap().held.len();
    assert_eq!(
        held_before, 3,
        "the cancelled runs are still held until reported"
    );
    // The result was checked before the forget (a cancelled task's run: the store's
    // history vouches for it), recorded after it.
    let late = success(alices[0], 1, 10.0);
    let late_ones = std::slice::from_ref(&late);
    assert_eq!(c.history_wanted(AGENT, late_ones), Ok(vec![0]));
    c.forget(AppId(1)).unwrap();
    let stored = StoredAttempt {
        agent: AGENT,
        recorded: false,
        leased_ms: 100,
    };
    let _before = c.take_effects();
    match c.record_report(
        AGENT,
        vec![late.clone()],
        &ReportHistory::from([(0, Some(stored))]),
        300,
    ) {
        Ok(ReportAnswer::Recorded { classes, .. }) => {
            let changes = c.take_effects().changes;
            assert!(changes.is_empty(), "{changes:?}");
            assert_eq!(classes, [ResultClass::Late]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.history_wanted(AGENT, late_ones),
        Err(ReportError::UnknownTask(alices[0]))
    );
    assert_eq!(c.policy.stats.samples(AppId(1), "p"), 0, "not profiled");
    let (_, kill) = c.heartbeat(AGENT, 400).unwrap();
    assert_eq!(kill.len(), 2, "the cancelled runs are still killed");
    // The agent dropped them: reconciling frees its slots, and nothing goes back anywhere.
    let bobs: Vec<_> = batch
        .tasks
        .iter()
        .filter(|t| t.task.app == AppId(2))
        .map(|t| hetpilot_protocol::protocol::TaskAttempt {
            task: t.task,
            attempt: t.attempt,
        })
        .collect();
    let _before = c.take_effects();
    c.reconcile(AGENT, batch.lease_ms, &bobs, 500).unwrap();
    let given_back = c.take_effects().changes;
    assert!(given_back.is_empty(), "{given_back:?}");
    assert_eq!(c.queues().agent(AGENT).unwrap().held.len(), 1);
    let next = c.lease(AGENT, 4, 600).unwrap();
    assert!(next.tasks.is_empty(), "bob's only task is leased already");
}

#[test]
fn applications_end_when_their_last_task_ends_and_are_listed_by_age() {
    let mut c = control(&[("alice", 1), ("bob", 1), ("alice", 2)]);
    let batch = c.lease(AGENT, 2, 100).unwrap();
    let results: Vec<TaskResult> = batch
        .tasks
        .iter()
        .map(|t| success(t.task, t.attempt, 5.0))
        .collect();
    assert_eq!(
        results.iter().map(|r| r.task.app).collect::<Vec<_>>(),
        [AppId(1), AppId(2)]
    );
    let changes = record_current(&mut c, results, 1_000);
    let ended: Vec<AppId> = changes
        .iter()
        .filter_map(|ch| match ch {
            Change::AppEnded { app, now_ms: 1_000 } => Some(*app),
            _ => None,
        })
        .collect();
    assert_eq!(ended, [AppId(1), AppId(2)]);
    c.cancel(AppId(3), 9_000);
    assert_eq!(c.queues().ended_by(999), []);
    assert_eq!(c.queues().ended_by(1_000), [AppId(1), AppId(2)]);
    assert_eq!(
        c.queues().ended_by(u64::MAX),
        [AppId(1), AppId(2), AppId(3)]
    );
    assert_eq!(
        c.queues().owner_tasks("alice"),
        OwnerTasks {
            queued: 0,
            stored: 3
        }
    );
}
