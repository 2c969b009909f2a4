//! What the service's tests share: a manager on a fresh data directory, its admin, users,
//! a registration token and a registered `local` agent, and a successful run's result.

use super::{admin_token_path, now_ms, Manager, Principal};
use crate::config::ManagerConfig;
use hetpilot_protocol::protocol::{
    Measurements, NewAgentToken, NewUser, Outcome, RegisterRequest, TaskResult,
};
use hetpilot_protocol::{AgentId, TaskRef};
use std::path::Path;
use std::sync::Arc;

/// A manager on `dir` with the embedded defaults and `overrides` (key, value), and its admin.
pub fn open(dir: &Path, overrides: &[(&str, String)]) -> (ManagerConfig, Arc<Manager>, Principal) {
    let mut layers = vec![("data_dir", dir.display().to_string())];
    layers.extend(overrides.iter().cloned());
    let settings = ManagerConfig::load(None, &layers).unwrap();
    let m = Manager::open(settings.clone()).unwrap();
    let token = std::fs::read_to_string(admin_token_path(dir)).unwrap();
    let admin = m.authenticate(Some(token.trim())).unwrap();
    (settings, m, admin)
}

/// A new user `name`, authenticated.
pub async fn user(m: &Manager, admin: &Principal, name: &str) -> Principal {
    let token = m
        .create_user(admin, NewUser { name: name.into() })
        .await
        .unwrap()
        .token;
    m.authenticate(Some(&token)).unwrap()
}

/// The registration of an agent of platform `local` on `host` (4 cores, 1 GiB).
pub fn local_request(host: &str) -> RegisterRequest {
    RegisterRequest {
        platform: "local".into(),
        hostname: host.into(),
        cores: 4,
        memory_mb: 1024,
        slots: None,
        batch_job_id: None,
        walltime_end: None,
        pilot: None,
        zero_work: false,
        resources: Default::default(),
        protocol_version: hetpilot_protocol::agent_version::AGENT_PROTOCOL,
        registration_key: None,
    }
}

/// An agent of platform `local` on `host` ([`local_request`]), registered with
/// `registration`.
pub async fn local_agent(
    m: &Manager,
    registration: &Principal,
    host: &str,
) -> (Principal, AgentId) {
    let r = m
        .register(registration, None, local_request(host))
        .await
        .unwrap();
    (m.authenticate(Some(&r.credential)).unwrap(), r.agent)
}

/// A registration token of platform `local`, authenticated.
pub async fn registration(m: &Manager, admin: &Principal) -> Principal {
    let token = m
        .create_agent_token(
            admin,
            NewAgentToken {
                platform: "local".into(),
                ttl_secs: None,
                register_from: None,
            },
        )
        .await
        .unwrap()
        .token;
    m.authenticate(Some(&token)).unwrap()
}

/// Attempt `attempt` of `task` succeeded after a second's run, ending now.
pub fn success(task: TaskRef, attempt: u32) -> TaskResult {
    let now = now_ms();
    TaskResult {
        task,
        attempt,
        outcome: Outcome::Success,
        exit_code: Some(0),
        signal: None,
        measurements: Measurements {
            wall_ms: 1_000.0,
            started_at_ms: now.saturating_sub(1_000),
            ended_at_ms: now,
            ..Measurements::default()
        },
        stdout_path: None,
        stderr_path: None,
        output_tail: String::new(),
        error: None,
        staging: None,
    }
}
