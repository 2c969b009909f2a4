//! What reservations of parallel tasks cost a lease when many wait: an application that
//! found too few agents free of other reservations is not looked at again until one is
//! freed or the agents change, and the agents of standing reservations are not checked
//! again until the agents or the lease plan change. Counted in agents looked at
//! (`Queues::may_hold` calls), not time.

use super::*;
use crate::test_apps::{alice_entry, array_app};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId};

/// Agents on one platform, of one slot each.
const AGENTS: u64 = 100;

fn parallel_app(q: &mut Queues, id: u64, procs: u64) {
    let spec = AppSpec {
        max_attempts: 1,
        timeout_secs: Some(10),
        procs: Some(procs),
        ..array_app(&format!("run{id}"), 1)
    };
    q.insert_app(alice_entry(AppId(id), spec));
}

fn join(q: &mut Queues, id: u64) {
    q.insert_agent(AgentEntry::new(
        AgentId(id),
        "p".into(),
        format!("n{id}"),
        1,
        0,
    ));
}

/// Eleven runs as wide as the platform: the first is leased, the second reserves every
/// agent behind it, the other nine find no room.
fn crowded() -> Queues {
    let mut q = Queues::new(60_000);
    for id in 1..=AGENTS {
        join(&mut q, id);
    }
    for app in 1..=11 {
        parallel_app(&mut q, app, AGENTS);
    }
    let first = q.lease(AgentId(1), 1, 1).unwrap().tasks;
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].hosts.len(), AGENTS as usize);
    // The next lease reserves every agent for the second run (its first reservation
    // was used by the first run's lease).
    assert!(q.lease(AgentId(2), 1, 2).unwrap().tasks.is_empty());
    let second = q.reservation(AppId(2)).expect("the second run reserves");
    assert_eq!(second.agents.len(), AGENTS as usize);
    q
}

#[test]
fn leases_do_not_look_at_every_agent_again_for_runs_that_found_no_room() {
    let mut q = crowded();
    for app in 3..=11 {
        assert!(q.reservation(AppId(app)).is_none(), "app {app}: no room");
    }
    // Every other agent asks (all busy as members of the first run): nothing changed
    // since the last look, so no lease looks at the agents again.
    let before = q.may_hold_calls.get();
    for id in 3..=AGENTS {
        assert!(q.lease(AgentId(id), 1, 3).unwrap().tasks.is_empty());
    }
    let looked = q.may_hold_calls.get() - before;
    assert!(
        looked < AGENTS,
        "{} leases looked at {looked} agents (a pass over the {AGENTS} agents for each of \
         the 10 runs, reserved or waiting, per lease: {})",
        AGENTS - 2,
        10 * AGENTS * (AGENTS - 2)
    );
}

#[test]
fn a_run_that_found_no_room_reserves_once_agents_join_or_a_reservation_ends() {
    let mut q = crowded();
    assert!(q.reservation(AppId(3)).is_none());
    // A wide run of 2 behind them all: two new agents make room for it, the next lease
    // looks again.
    parallel_app(&mut q, 12, 2);
    assert!(q.lease(AgentId(3), 1, 3).unwrap().tasks.is_empty());
    assert!(q.reservation(AppId(12)).is_none(), "no agent free of holds");
    join(&mut q, AGENTS + 1);
    join(&mut q, AGENTS + 2);
    let got = q.lease(AgentId(AGENTS + 1), 1, 4).unwrap().tasks;
    assert_eq!(
        got.iter().map(|t| t.task.app).collect::<Vec<_>>(),
        [AppId(12)],
        "the run of 2 starts on the new agents"
    );
    // The second run is cancelled, its reservation dropped (the first run's slots stay
    // held): the third run, which found no room, reserves at the next lease.
    q.cancel(AppId(2));
    assert!(q.lease(AgentId(3), 1, 5).unwrap().tasks.is_empty());
    let third = q.reservation(AppId(3)).expect("the third run reserves");
    assert_eq!(third.agents.len(), AGENTS as usize);
}
