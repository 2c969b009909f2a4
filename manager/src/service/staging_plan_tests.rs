//! Pulls are served while a Het-HPS plan is being made: the plan is held "in progress" by
//! the test's gate (no timing involved), a pull leases by the default order meanwhile and
//! another returns at its `wait_ms`, and the plan is installed once it is let through.

use super::*;
use crate::config::ManagerConfig;
use crate::service::test_support;
use hetpilot_protocol::protocol::{NewAgentToken, NewUser, PullRequest};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::AgentId;
use std::time::Duration;

/// Long enough never to fire when things work; a hang fails the test instead.
const NEVER: Duration = Duration::from_secs(60);

fn pull(max: u32, wait_ms: u64) -> PullRequest {
    PullRequest {
        max,
        wait_ms,
        started: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_are_served_while_a_plan_is_made_and_the_plan_is_installed_when_ready() {
    let dir = tempfile::tempdir().unwrap();
    let settings =
        ManagerConfig::load(None, &[("data_dir", dir.path().display().to_string())]).unwrap();
    let m = Manager::open(settings).unwrap();
    let admin_token = std::fs::read_to_string(super::super::admin_token_path(dir.path())).unwrap();
    let admin = m.authenticate(Some(admin_token.trim())).unwrap();
    let alice = m
        .create_user(
            &admin,
            NewUser {
                name: "alice".into(),
            },
        )
        .await
        .unwrap()
        .token;
    let alice = m.authenticate(Some(&alice)).unwrap();
    let registration = m
        .create_agent_token(
            &admin,
            NewAgentToken {
                platform: "local".into(),
                ttl_secs: None,
                register_from: None,
            },
        )
        .await
        .unwrap()
        .token;
    let registration = m.authenticate(Some(&registration)).unwrap();
    let (a1, id1) = test_support::local_agent(&m, &registration, "node1").await;
    let (a2, id2) = test_support::local_agent(&m, &registration, "node2").await;

    // The planner's thread will wait at the gate until the test lets it through.
    let gate = m.staging_planner.gate.clone();
    let held = gate.lock().await;
    m.spawn_staging_planner();
    let mut status = m.staging_status();
    let lines: Vec<String> = (0..16).map(|i| format!("g{}", (i + i / 4) % 4)).collect();
    let spec: AppSpec = serde_json::from_value(serde_json::json!({
        "name": "groups",
        "command": "true",
        "tasks": {"lines": lines},
        "inputs": [
            {"uri": "data/{}/f0.bin", "size": 1 << 20},
            {"uri": "data/{}/f1.bin", "size": 1 << 20}
        ],
        "data_intensive": true
    }))
    .unwrap();
    let app = m.submit(&alice, spec).await.unwrap().app;
    tokio::time::timeout(NEVER, status.wait_for(|s| s.planning == 1))
        .await
        .expect("the planner starts")
        .unwrap();

    // While the plan is being made, a pull leases at once, in the default (queue) order.
    let first = tokio::time::timeout(NEVER, m.pull(&a1, id1, pull(2, 30_000)))
        .await
        .expect("a pull does not wait for the plan")
        .unwrap();
    let indices: Vec<u64> = first.tasks.iter().map(|t| t.task.index).collect();
    assert_eq!(indices, [0, 1]);
    assert!(first.tasks.iter().all(|t| t.task.app == app));
    // A pull that gets nothing returns at its wait_ms, the plan still in progress.
    let started = std::time::Instant::now();
    let empty = tokio::time::timeout(NEVER, m.pull(&a2, id2, pull(0, 50)))
        .await
        .expect("a pull's wait_ms bounds it while a plan is made")
        .unwrap();
    assert!(empty.tasks.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(
        *status.borrow(),
        StagingStatus {
            planning: 1,
            installed: 0
        }
    );
    assert_eq!(
        m.control().queues().staging_due().len(),
        1,
        "no plan in place"
    );

    // Let the plan through: it is installed, for the current agent set, in one step.
    drop(held);
    tokio::time::timeout(NEVER, status.wait_for(|s| s.installed == 1))
        .await
        .expect("the plan is installed")
        .unwrap();
    assert_eq!(status.borrow().planning, 0);
    assert!(m.control().queues().staging_due().is_empty());
    // The next tasks follow the plan: each agent takes 4 of its own list (each list holds
    // two groups of 4 tasks, at most 2 of them leased already), so no group is split.
    let mut groups: [Vec<AgentId>; 4] = Default::default();
    for (who, id) in [(&a1, id1), (&a2, id2)] {
        let batch = m.pull(who, id, pull(4, 0)).await.unwrap();
        for t in batch.tasks {
            groups[((t.task.index + t.task.index / 4) % 4) as usize].push(id);
        }
    }
    assert_eq!(groups.iter().map(Vec::len).sum::<usize>(), 8);
    for (g, agents) in groups.iter().enumerate() {
        assert!(
            agents.iter().all(|a| *a == agents[0]),
            "group {g} split: {agents:?}"
        );
    }
}
