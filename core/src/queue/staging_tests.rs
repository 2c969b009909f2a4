//! Leasing through Het-HPS partitions: binding, planned order, stealing, agent loss,
//! exactly-once with the other lease paths.

use super::*;
use crate::test_apps::{alice_entry, array_app};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::{AgentId, AppId};

fn data_app(id: u64, groups: &[&str]) -> AppEntry {
    let spec = AppSpec {
        tasks: TaskSource::Lines(groups.iter().map(|g| g.to_string()).collect()),
        max_attempts: 2,
        inputs: vec!["db/{}.bin".into()],
        data_intensive: true,
        ..array_app(&format!("app{id}"), 1)
    };
    alice_entry(AppId(id), spec)
}

fn setup() -> Queues {
    let mut q = Queues::new(1_000);
    q.insert_app(data_app(1, &["a", "b", "a", "b", "a", "b"]));
    for a in [1, 2] {
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

/// Installs the plan a planner would make: group a on agent 1, group b on agent 2.
fn plan(q: &mut Queues) {
    let mut due = q.staging_due();
    assert_eq!(due.len(), 1);
    let req = &due.remove(0).render();
    assert_eq!(req.tasks.len(), 6);
    assert_eq!(req.tasks[1].1[0].source.to_string(), "db/b.bin");
    let p = Partitions::new(
        req.generation,
        vec![(AgentId(1), vec![4, 2, 0]), (AgentId(2), vec![1, 3, 5])],
        vec![],
    );
    assert!(q.set_partitions(AppId(1), p));
    assert!(q.staging_due().is_empty(), "a plan in place is not redone");
}

fn indices(b: &LeaseBatch) -> Vec<u64> {
    b.tasks.iter().map(|t| t.task.index).collect()
}

#[test]
fn agents_get_their_partition_in_planned_order_then_steal() {
    let mut q = setup();
    assert_eq!(q.staging_due()[0].agents.len(), 2);
    plan(&mut q);
    assert_eq!(indices(&q.lease(AgentId(1), 2, 1).unwrap()), [4, 2]);
    assert_eq!(indices(&q.lease(AgentId(2), 1, 1).unwrap()), [1]);
    // Agent 1 has one left of its own, then steals agent 2's last task.
    assert_eq!(indices(&q.lease(AgentId(1), 2, 1).unwrap()), [0, 5]);
    assert_eq!(indices(&q.lease(AgentId(2), 4, 1).unwrap()), [3]);
    assert!(q.lease(AgentId(1), 4, 1).unwrap().tasks.is_empty());
    assert_eq!(q.app(AppId(1)).unwrap().counts.leased, 6);
}

#[test]
fn a_lost_agent_returns_its_partition_and_triggers_a_new_plan() {
    let mut q = setup();
    plan(&mut q);
    assert_eq!(indices(&q.lease(AgentId(2), 1, 1).unwrap()), [1]);
    q.heartbeat(AgentId(1), 1_500).unwrap();
    let changes = q.expire(1_500);
    assert!(!changes.is_empty(), "agent 2 is lost");
    // Agent 2's unstarted tasks are in the pool before any stealing; its leased task
    // went back to the queue and comes once the partitions are empty.
    assert_eq!(indices(&q.lease(AgentId(1), 1, 1_500).unwrap()), [4]);
    assert_eq!(indices(&q.lease(AgentId(1), 3, 1_500).unwrap()), [2, 0, 3]);
    assert_eq!(indices(&q.lease(AgentId(1), 3, 1_500).unwrap()), [5, 1]);
    // The agent set changed, so the remaining waiting tasks are due for a new plan.
    assert!(q.staging_due().is_empty(), "nothing waits any more");
}

#[test]
fn the_agent_set_changing_makes_a_plan_stale_and_an_old_plan_is_refused() {
    let mut q = setup();
    let old = q.staging_due().remove(0).generation;
    q.insert_agent(AgentEntry::new(
        AgentId(3),
        "local".into(),
        "h".into(),
        4,
        0,
    ));
    assert!(!q.set_partitions(AppId(1), Partitions::new(old, vec![], vec![])));
    plan(&mut q);
    q.drain(AgentId(2));
    let due = q.staging_due();
    assert_eq!(due.len(), 1, "draining agent 2 makes the plan stale");
    assert_eq!(due[0].agents.len(), 2);
    // Until the new plan is in, agent 2's list is in the pool and agent 3 takes from it.
    assert_eq!(indices(&q.lease(AgentId(3), 2, 1).unwrap()), [1, 3]);
}

#[test]
fn cancelling_drops_the_partitions() {
    let mut q = setup();
    plan(&mut q);
    q.cancel(AppId(1));
    assert!(q.lease(AgentId(1), 4, 1).unwrap().tasks.is_empty());
    assert!(q.staging_due().is_empty());
}

#[test]
fn a_plan_finished_after_its_application_was_cancelled_or_forgotten_is_not_installed() {
    let mut q = setup();
    let generation = q.staging_due().remove(0).generation;
    q.cancel(AppId(1));
    assert!(!q.set_partitions(AppId(1), Partitions::new(generation, vec![], vec![])));
    q.forget(AppId(1)).unwrap();
    assert!(!q.set_partitions(AppId(1), Partitions::new(generation, vec![], vec![])));
    assert!(q.partitions.is_empty());
}
