//! Wide tasks behind a stream of narrow ones: with reservations the wide task starts once
//! its agent's runs end, narrow runs backfill only where they do not delay it; without,
//! it waits for the stream to run dry.

use super::*;
use crate::test_apps::{alice_entry, array_app, success};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId, TaskRef};

const WIDE: AppId = AppId(2);

fn spec(n: u64, cores: u32, timeout_secs: Option<u64>) -> AppSpec {
    AppSpec {
        cores,
        timeout_secs,
        ..array_app("a", n)
    }
}

fn add_app(q: &mut Queues, id: u64, spec: AppSpec) {
    q.insert_app(alice_entry(AppId(id), spec));
}

fn done(q: &mut Queues, agent: u64, task: TaskRef) {
    let attempt = q.app(task.app).unwrap().task(task.index).unwrap().attempt;
    q.apply_result(AgentId(agent), success(task, attempt));
}

fn lease(q: &mut Queues, agent: u64, max: u32, now_ms: u64) -> Vec<TaskRef> {
    let batch = q.lease(AgentId(agent), max, now_ms).unwrap();
    let tasks: Vec<TaskRef> = batch.tasks.iter().map(|a| a.task).collect();
    q.started(
        AgentId(agent),
        &batch
            .tasks
            .iter()
            .map(|a| hetpilot_protocol::protocol::TaskAttempt {
                task: a.task,
                attempt: a.attempt,
            })
            .collect::<Vec<_>>(),
        now_ms,
    )
    .unwrap();
    tasks
}

/// One 8-slot agent running 1-core tasks of app 1 (a 10 s timeout) one slot freeing every
/// second, an 8-core task of app 2 waiting: returns when (ms) the wide task was leased, if
/// it was before app 1 ran dry.
fn stream_then_wide(reservations: bool) -> Option<u64> {
    let mut q = Queues::new(60_000);
    q.set_reservations(reservations);
    add_app(&mut q, 1, spec(200, 1, Some(10)));
    q.insert_agent(AgentEntry::new(AgentId(1), "p".into(), "h".into(), 8, 0));
    let mut running: Vec<TaskRef> = lease(&mut q, 1, 8, 1);
    assert_eq!(running.len(), 8);
    add_app(&mut q, WIDE.0, spec(1, 8, Some(10)));
    for second in 1..150u64 {
        let now = second * 1000;
        let ended = running.remove(0);
        done(&mut q, 1, ended);
        for t in lease(&mut q, 1, 8, now) {
            if t.app == WIDE {
                return Some(now);
            }
            running.push(t);
        }
        if q.app(AppId(1)).unwrap().counts.waiting == 0 {
            return None;
        }
    }
    None
}

#[test]
fn a_wide_task_starts_once_its_reserved_slots_free_and_starves_without() {
    // The eight runs leased at the start end one a second: all eight slots are free
    // after the eighth; nothing leased meanwhile (10 s each) could end before that.
    assert_eq!(stream_then_wide(true), Some(8_000));
    assert_eq!(
        stream_then_wide(false),
        None,
        "starves without reservations"
    );
}

#[test]
fn short_runs_backfill_before_the_shadow_time_and_unknown_ones_do_not() {
    let mut q = Queues::new(60_000);
    add_app(&mut q, 1, spec(4, 1, Some(100)));
    q.insert_agent(AgentEntry::new(AgentId(1), "p".into(), "h".into(), 8, 0));
    assert_eq!(lease(&mut q, 1, 4, 1).len(), 4);
    add_app(&mut q, WIDE.0, spec(1, 8, None));
    add_app(&mut q, 3, spec(10, 1, Some(5)));
    add_app(&mut q, 4, spec(10, 1, None));
    let got = lease(&mut q, 1, 4, 1_000);
    let r = q.reservation(WIDE).expect("the wide task is reserved");
    assert_eq!(r.agents, vec![AgentId(1)]);
    assert_eq!(r.shadow_ms, Some(100_001));
    assert_eq!(q.hold(AgentId(1)).map(|h| h.cores), Some(8));
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got.iter().all(|t| t.app == AppId(3)), "{got:?}");
}

#[test]
fn the_reservation_goes_to_the_agent_that_frees_earliest_and_follows_a_lost_agent() {
    let mut q = Queues::new(60_000);
    add_app(&mut q, 1, spec(4, 1, Some(100)));
    q.insert_agent(AgentEntry::new(AgentId(1), "p".into(), "h".into(), 4, 0));
    q.insert_agent(AgentEntry::new(AgentId(2), "p".into(), "h".into(), 4, 0));
    // Agent 1 takes four long runs, agent 2 four short ones.
    assert_eq!(lease(&mut q, 1, 4, 1).len(), 4);
    add_app(&mut q, 3, spec(4, 1, Some(10)));
    assert_eq!(lease(&mut q, 2, 4, 1).len(), 4);
    add_app(&mut q, WIDE.0, spec(1, 4, None));
    assert!(lease(&mut q, 1, 0, 2).is_empty());
    assert_eq!(q.reservation(WIDE).unwrap().agents, vec![AgentId(2)]);
    assert_eq!(q.reserved_free_slots(AgentId(2)), 0);
    // Agent 2 is lost: the reservation moves to agent 1.
    q.heartbeat(AgentId(1), 190_000).unwrap();
    q.expire(200_000);
    assert!(q.hold(AgentId(2)).is_none());
    assert!(lease(&mut q, 1, 0, 200_000).is_empty());
    assert_eq!(q.reservation(WIDE).unwrap().agents, vec![AgentId(1)]);
}

#[test]
fn no_agent_large_enough_means_no_reservation_and_narrow_work_goes_on() {
    let mut q = Queues::new(60_000);
    add_app(&mut q, WIDE.0, spec(1, 16, None));
    add_app(&mut q, 3, spec(10, 1, None));
    q.insert_agent(AgentEntry::new(AgentId(1), "p".into(), "h".into(), 8, 0));
    assert_eq!(lease(&mut q, 1, 8, 1).len(), 8);
    assert!(q.reservation(WIDE).is_none());
    assert!(q.hold(AgentId(1)).is_none());
}

#[test]
fn a_pull_parked_before_the_slots_freed_still_gets_the_reserved_wide_task() {
    // The agent asked for one slot while seven were busy; by the time the manager answers
    // that pull, every run has ended: the pull's size must not keep the wide task out.
    let mut q = Queues::new(60_000);
    add_app(&mut q, 1, spec(8, 1, Some(10)));
    q.insert_agent(AgentEntry::new(AgentId(1), "p".into(), "h".into(), 8, 0));
    let running = lease(&mut q, 1, 8, 1);
    assert_eq!(running.len(), 8);
    add_app(&mut q, WIDE.0, spec(1, 8, Some(10)));
    assert!(lease(&mut q, 1, 1, 2).is_empty(), "no slot free yet");
    for t in running {
        done(&mut q, 1, t);
    }
    let got = lease(&mut q, 1, 1, 3);
    assert_eq!(
        got.iter().map(|t| t.app).collect::<Vec<_>>(),
        [WIDE],
        "{got:?}"
    );
}
