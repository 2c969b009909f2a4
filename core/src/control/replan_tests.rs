//! What asks the scheduling round and the staging planner to plan again (`Wake::replan`):
//! an application or an agent coming or going, a cancellation, new platform profiles;
//! not a lease, a start or a heartbeat.

use super::*;
use crate::test_apps::{agent_join, array_app, control_settings};
use hetpilot_protocol::spec::TaskSource;

const AGENT: AgentId = AgentId(3);
const APP: AppId = AppId(1);

fn join(c: &mut Control) {
    c.agent_joined(agent_join(AGENT, "p", 2), 0);
}

fn submit(c: &mut Control) {
    let spec = AppSpec {
        tasks: TaskSource::Array { start: 0, end: 3 },
        ..array_app("a", 1)
    };
    let template = spec.validate().unwrap();
    c.submit(APP, "alice".into(), spec, template, 0);
}

#[test]
fn arrivals_departures_cancellations_and_profiles_ask_for_a_round_and_leases_do_not() {
    let mut c = Control::new(&control_settings(), Measured::default()).unwrap();
    join(&mut c);
    assert!(c.take_effects().wake.replan, "an agent joined");
    submit(&mut c);
    assert!(c.take_effects().wake.replan, "an application arrived");
    let batch = c.lease(AGENT, 2, 10).unwrap();
    let at: Vec<TaskAttempt> = batch
        .tasks
        .iter()
        .map(|t| TaskAttempt {
            task: t.task,
            attempt: t.attempt,
        })
        .collect();
    c.started(AGENT, &at, 11).unwrap();
    let _ = c.heartbeat(AGENT, 12).unwrap();
    assert!(
        !c.take_effects().wake.replan,
        "a lease, a start and a heartbeat"
    );
    let _ = c.cancel(APP, 20);
    assert!(c.take_effects().wake.replan, "an application cancelled");
    let _ = c.cancel(APP, 21);
    assert!(
        !c.take_effects().wake.replan,
        "cancelled already: nothing changed"
    );
    c.use_profiles(Default::default(), Default::default());
    assert!(c.take_effects().wake.replan, "the platforms' profiles");
    c.deregister(AGENT, 30).unwrap();
    assert!(c.take_effects().wake.replan, "an agent left");
}
