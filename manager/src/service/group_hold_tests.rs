//! A multi-node pilot's agents get no task before their group is whole: not a task of a
//! wide application that holds a reservation on one of them, nor a parallel run.

use super::test_support::open;
use crate::provision::PilotHost;
use hetpilot_protocol::protocol::{PullRequest, RegisterRequest};
use hetpilot_protocol::spec::AppSpec;

#[tokio::test]
async fn an_agent_of_a_group_not_yet_whole_is_leased_no_wide_or_parallel_task() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = open(dir.path(), &[]);
    let (pilot, token) = m.new_pilot("local", 60_000, None, 2).await.unwrap();
    let who = m.authenticate(Some(&token)).unwrap();
    let first = m
        .register(
            &who,
            None,
            RegisterRequest {
                cores: 2,
                batch_job_id: Some("42".into()),
                pilot: Some(pilot.name.clone()),
                ..super::test_support::local_request("n2")
            },
        )
        .await
        .unwrap();
    assert!(m.control().held_for_its_group(first.agent, super::now_ms()));
    for extra in [
        serde_json::json!({"cores": 2}),
        serde_json::json!({"procs": 2}),
    ] {
        let mut spec = serde_json::json!({
            "name": "wide", "command": "true", "tasks": {"array": {"start": 0, "end": 0}},
        });
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let spec: AppSpec = serde_json::from_value(spec).unwrap();
        m.submit(&admin, spec).await.unwrap();
    }
    let agent = m.authenticate(Some(&first.credential)).unwrap();
    let pull = PullRequest {
        max: 2,
        wait_ms: 0,
        started: Vec::new(),
    };
    let answer = m.pull(&agent, first.agent, pull).await.unwrap();
    assert!(answer.tasks.is_empty(), "{:?}", answer.tasks);
}
