//! What an agent's reports say it wants: a pull parked before its runs ended leases up to
//! it, never more than the slots the manager counts free, whatever number a report sends.

use super::test_support::{self, success};
use hetpilot_protocol::protocol::{PullRequest, ReportRequest};
use hetpilot_protocol::spec::AppSpec;

fn pull(max: u32) -> PullRequest {
    PullRequest {
        max,
        wait_ms: 0,
        started: vec![],
    }
}

#[tokio::test]
async fn a_reported_want_raises_a_pull_only_to_the_free_slots_even_when_hostile() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = test_support::open(dir.path(), &[]);
    let spec: AppSpec = serde_json::from_value(serde_json::json!({
        "name": "many", "command": "true", "tasks": {"array": {"start": 0, "end": 99}}
    }))
    .unwrap();
    m.submit(&admin, spec).await.unwrap();
    let registration = test_support::registration(&m, &admin).await;
    let (agent, id) = test_support::local_agent(&m, &registration, "node1").await;
    let first = m.pull(&agent, id, pull(4)).await.unwrap();
    assert_eq!(first.tasks.len(), 4, "its 4 slots");
    let results = first
        .tasks
        .iter()
        .map(|a| success(a.task, a.attempt))
        .collect();
    let report = ReportRequest {
        results,
        wanted: Some(u32::MAX),
    };
    m.record(&agent, id, report).await.unwrap();
    // A pull asking for nothing gets the 4 slots the report freed, not u32::MAX tasks.
    let next = m.pull(&agent, id, pull(0)).await.unwrap();
    assert_eq!(next.tasks.len(), 4);
    // Those slots are held again: the want reaches no further.
    let after = m.pull(&agent, id, pull(0)).await.unwrap();
    assert!(after.tasks.is_empty(), "{} tasks", after.tasks.len());
}
