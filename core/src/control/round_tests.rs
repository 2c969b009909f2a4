//! What a round sees of the agents: the slots of a parallel run count as busy on every
//! agent of its group, the head and the members, so the round's allocator does not place
//! work on a platform whose slots a wide run holds.

use super::round::live_state;
use crate::queue::{AgentEntry, AppEntry, Queues};
use crate::test_apps::{alice_entry, array_app};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::{AgentId, AppId};

fn app(id: u64, procs: Option<u64>) -> AppEntry {
    let spec = AppSpec {
        timeout_secs: Some(10),
        procs,
        ..array_app(&format!("a{id}"), 1)
    };
    alice_entry(AppId(id), spec)
}

#[test]
fn a_parallel_runs_member_agents_show_its_slots_as_held() {
    let mut q = Queues::new(60_000);
    for id in [1, 2] {
        q.insert_agent(AgentEntry::new(
            AgentId(id),
            "p".into(),
            format!("n{id}"),
            2,
            0,
        ));
    }
    q.insert_app(app(1, Some(4)));
    let leased = q.lease(AgentId(1), 2, 1).unwrap().tasks;
    assert_eq!(leased.len(), 1, "{leased:?}");
    let (_, agents) = live_state(&q);
    for agent in &agents {
        assert_eq!(
            agent.held,
            vec![(AppId(1), 2)],
            "agent {:?} holds the run's 2 slots on it",
            agent.id
        );
    }
}

/// Rounds are numbered as their decisions take effect, from 1, with no gap: a reader of
/// two views can tell whether another round ran between them.
#[test]
fn rounds_are_numbered_consecutively_as_they_take_effect() {
    use super::parallel_workflow_tests::{control, join, round, spec};
    let mut c = control(vec![spec("a", None, None, None)]);
    assert_eq!(c.schedule_view().round, 0, "none yet");
    join(&mut c, 10, "p", 2);
    for (n, now_ms) in [(1, 1_000), (2, 2_000), (3, 2_001)] {
        round(&mut c, now_ms);
        assert_eq!(c.schedule_view().effective_ms, 0, "not stamped yet");
        // The live shell stamps when it took effect, once: a later stamp (after a round
        // that failed and left this view in effect) does not move it.
        c.round_took_effect(now_ms + 40);
        c.round_took_effect(now_ms + 90);
        let view = c.schedule_view();
        assert_eq!(
            (view.round, view.at_ms, view.effective_ms),
            (n, now_ms, now_ms + 40)
        );
    }
}
