//! Registrations tried again after their answer was lost (`registration_retry`): the same
//! agent comes back with a fresh credential, across a restart too; nobody else does.

use super::test_support::{local_request, open, registration};
use super::{auth, Manager, Principal, ServiceError};
use crate::provision::PilotHost;
use hetpilot_protocol::pilots::PilotState;
use hetpilot_protocol::protocol::{HeartbeatRequest, RegisterRequest, RegisterResponse};
use std::sync::Arc;

const KEY: &str = "0123456789abcdef0123456789abcdef";

fn request(pilot: Option<&str>, key: Option<&str>) -> RegisterRequest {
    RegisterRequest {
        pilot: pilot.map(String::from),
        registration_key: key.map(String::from),
        ..local_request("node1")
    }
}

async fn register(
    m: &Manager,
    token: &str,
    req: RegisterRequest,
) -> Result<RegisterResponse, ServiceError> {
    let who = m.authenticate(Some(token)).unwrap();
    m.register(&who, None, req).await
}

fn forbidden(r: Result<RegisterResponse, ServiceError>) -> String {
    match r {
        Err(ServiceError::Forbidden(msg)) => msg,
        other => panic!("expected 403, got {other:?}"),
    }
}

/// The manager recorded a pilot's agent and was killed before answering: after the
/// restart the agent's retry (same key) gets its agent back, its pilot still running
/// with one member; the credential it never received is dead, the new one works.
#[tokio::test]
async fn a_retry_after_a_restart_gets_the_same_agent_with_a_fresh_credential() {
    let dir = tempfile::tempdir().unwrap();
    let (settings, m, admin) = open(dir.path(), &[]);
    let (pilot, token) = m.new_pilot("local", 60_000, None, 1).await.unwrap();
    let lost = register(&m, &token, request(Some(&pilot.name), Some(KEY)))
        .await
        .unwrap();
    drop(m);
    let m = Manager::open(settings).unwrap();

    let again = register(&m, &token, request(Some(&pilot.name), Some(KEY)))
        .await
        .expect("the same agent, again");
    assert_eq!(again.agent, lost.agent);
    assert_ne!(again.credential, lost.credential);
    assert!(m.authenticate(Some(&lost.credential)).is_err());
    assert_eq!(
        m.authenticate(Some(&again.credential)).unwrap(),
        Principal::Agent(lost.agent)
    );
    let listed = m.list_pilots(&admin).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state, PilotState::Running);
    assert_eq!(listed[0].members.len(), 1);
    assert_eq!(listed[0].agent, Some(lost.agent.0));
    assert_eq!(m.list_agents(&admin).unwrap().len(), 1, "no second agent");

    // Another key (another process with the copied token) is no retry.
    let other = "fedcba9876543210fedcba9876543210";
    let msg = forbidden(register(&m, &token, request(Some(&pilot.name), Some(other))).await);
    assert!(msg.contains("no longer waiting"), "{msg}");

    // Once the agent called with its credential, its answer arrived: no more retries.
    let agent = m.authenticate(Some(&again.credential)).unwrap();
    m.heartbeat(&agent, again.agent, HeartbeatRequest::default())
        .unwrap();
    let msg = forbidden(register(&m, &token, request(Some(&pilot.name), Some(KEY))).await);
    assert!(msg.contains("no longer waiting"), "{msg}");
}

/// With a platform's registration token the retry is the same agent too; the key must
/// come from the same node, and only its hash is stored.
#[tokio::test]
async fn a_retry_with_a_platform_token_is_the_same_agent_and_only_the_key_hash_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = open(dir.path(), &[]);
    let who = registration(&m, &admin).await;
    let first = m
        .register(&who, None, request(None, Some(KEY)))
        .await
        .unwrap();
    let again = m
        .register(&who, None, request(None, Some(KEY)))
        .await
        .unwrap();
    assert_eq!(again.agent, first.agent);
    let elsewhere = RegisterRequest {
        hostname: "node2".into(),
        ..request(None, Some(KEY))
    };
    let other = m.register(&who, None, elsewhere).await.unwrap();
    assert_ne!(other.agent, first.agent, "another node is another agent");
    let plain = m.register(&who, None, request(None, None)).await.unwrap();
    assert_ne!(plain.agent, first.agent, "no key, no retry");

    let conn = rusqlite::Connection::open(super::database_path(dir.path())).unwrap();
    let stored: String = conn
        .query_row(
            "SELECT registration_key_hash FROM agents WHERE id = ?1",
            [first.agent.0 as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, auth::hash(KEY));
}

/// Racing retries of one registration: every answer is the same agent, and exactly one
/// credential works in the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_retries_end_with_one_agent_and_one_working_credential() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = open(dir.path(), &[]);
    let (pilot, token) = m.new_pilot("local", 60_000, None, 1).await.unwrap();
    let first = register(&m, &token, request(Some(&pilot.name), Some(KEY)))
        .await
        .unwrap();
    let m: Arc<Manager> = m;
    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (m, token, name) = (m.clone(), token.clone(), pilot.name.clone());
        racing.spawn(async move { register(&m, &token, request(Some(&name), Some(KEY))).await });
    }
    let answers: Vec<RegisterResponse> = racing
        .join_all()
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert!(answers.iter().all(|a| a.agent == first.agent));
    let working = std::iter::once(&first)
        .chain(&answers)
        .filter(|a| m.authenticate(Some(&a.credential)).is_ok())
        .count();
    assert_eq!(working, 1);
    assert_eq!(m.list_agents(&admin).unwrap().len(), 1);
}

/// A key that is too short, too long or not of the allowed characters is refused.
#[tokio::test]
async fn malformed_registration_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = open(dir.path(), &[]);
    let who = registration(&m, &admin).await;
    let long = "a".repeat(129);
    for key in [
        "short",
        long.as_str(),
        "0123456789abcdef/../..",
        "0123456789 abcdef",
    ] {
        let refused = m.register(&who, None, request(None, Some(key))).await;
        assert!(
            matches!(&refused, Err(ServiceError::BadRequest(msg)) if msg.contains("registration_key")),
            "{key}: {refused:?}"
        );
    }
}

/// An agent that left before it was heard from is kept no longer, and its key registers a
/// new agent.
#[tokio::test]
async fn an_agent_that_left_is_not_kept_and_its_key_is_no_retry() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = open(dir.path(), &[]);
    let who = registration(&m, &admin).await;
    let first = m
        .register(&who, None, request(None, Some(KEY)))
        .await
        .unwrap();
    assert_eq!(m.unanswered.len(), 1);
    let agent = m.authenticate(Some(&first.credential)).unwrap();
    m.deregister(&agent, first.agent).await.unwrap();
    assert_eq!(m.unanswered.len(), 0, "forgotten with the agent");
    let again = m
        .register(&who, None, request(None, Some(KEY)))
        .await
        .unwrap();
    assert_ne!(again.agent, first.agent);
}
