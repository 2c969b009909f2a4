//! The agent protocol's version: the manager takes agents of the versions it speaks (and
//! agents from before versions were sent, as version 1), refuses any other at registration
//! with a 400 naming the versions that work, and an agent refused at registration prints
//! why and exits non-zero at once instead of retrying.

use hetpilot_e2e::{array_app, Agent, Manager};
use hetpilot_protocol::agent_version::{supported_versions, AGENT_PROTOCOL};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Far longer than an agent takes to register or to give up on a refusal.
const LONG: Duration = Duration::from_secs(60);

fn registration(version: Option<u32>) -> Value {
    let mut body = json!({"platform": "local", "hostname": "node1", "cores": 2, "memory_mb": 1024});
    if let Some(v) = version {
        body["protocol_version"] = json!(v);
    }
    body
}

fn registered_agents(m: &Manager) -> usize {
    let (s, list) = m.http().get("/v1/agents", &m.admin);
    assert_eq!(s, 200, "{list}");
    list.as_array().unwrap().len()
}

#[test]
fn an_agent_of_another_protocol_version_is_refused_with_the_versions_that_work() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let token = m.agent_token("local");
    for version in [AGENT_PROTOCOL + 1, u32::MAX, 0] {
        let (status, body) = m
            .http()
            .post("/v1/agents", &token, &registration(Some(version)));
        assert_eq!(status, 400, "version {version}: {body}");
        let message = body["error"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("speaks agent protocol version {version}"))
                && message.contains(&format!("takes agent protocol {}", supported_versions())),
            "{message}"
        );
    }
    assert_eq!(registered_agents(&m), 0);
    // This build's version, and an agent that sends none (every agent from before
    // versions were sent), are taken.
    for version in [Some(AGENT_PROTOCOL), None] {
        let (status, body) = m.http().post("/v1/agents", &token, &registration(version));
        assert_eq!(status, 200, "version {version:?}: {body}");
    }
    assert_eq!(registered_agents(&m), 2);
}

#[test]
fn todays_agent_registers_and_runs_its_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 2, &[]);
    let app = m.submit(array_app("versioned", "true", 3));
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], 3, "{summary}");
}

/// A stand-in manager that answers every registration with `400 {"error": message}`;
/// returns its URL and the count of registrations it answered.
fn refusing_manager(message: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let registrations = Arc::new(AtomicUsize::new(0));
    let counted = registrations.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut reader = BufReader::new(stream);
            let mut request_line = String::new();
            let mut length = 0usize;
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                    break;
                }
                if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let (status, answer) = if request_line.starts_with("POST /v1/agents ") {
                counted.fetch_add(1, Ordering::SeqCst);
                ("400 Bad Request", json!({ "error": message }).to_string())
            } else {
                ("404 Not Found", json!({ "error": "not here" }).to_string())
            };
            let _ = write!(
                reader.get_mut(),
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (url, registrations)
}

#[test]
fn an_agent_refused_at_registration_prints_why_and_exits_without_retrying() {
    const WHY: &str = "protocol_version: this agent speaks agent protocol version 1; this \
                       manager takes agent protocol version 2: upgrade the agent";
    let dir = tempfile::tempdir().unwrap();
    let (url, registrations) = refusing_manager(WHY);
    let mut agent = Agent::start(
        &url,
        "local",
        "hpa_unused",
        1,
        &dir.path().join("agent"),
        &[],
    );
    let status = agent.wait_exit(LONG);
    assert_eq!(status, Some(1), "{}", agent.log());
    assert!(agent.log().contains(WHY), "{}", agent.log());
    assert_eq!(registrations.load(Ordering::SeqCst), 1, "{}", agent.log());
}
