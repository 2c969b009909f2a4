//! Many agents on one manager: an agent makes its heartbeats, long polls and reports on
//! one HTTP/2 connection (prior knowledge over plain TCP, ALPN under TLS), so each agent
//! costs the manager one descriptor; and the manager stretches the heartbeat interval,
//! and the lease timeout with it, as agents join, which a running agent follows.

use hetpilot_e2e::{free_port, poll_until, Manager};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

/// The socket inodes among `pid`'s open descriptors.
fn socket_inodes(pid: u32) -> HashSet<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            target
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// Established TCP connections of process `pid` to port `port` (`/proc/net/tcp` lists
/// the namespace's sockets; the process's descriptors say which are its own).
fn connections_to(pid: u32, port: u16) -> usize {
    let mine = socket_inodes(pid);
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let remote_port = f
                .get(2)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            let established = f.get(3) == Some(&"01");
            let inode = f.get(9).and_then(|i| i.parse::<u64>().ok());
            established && remote_port == Some(port) && inode.is_some_and(|i| mine.contains(&i))
        })
        .count()
}

/// Starts an agent on `m` and checks, over several heartbeats (the manager sees its
/// `last_seen_ms` move), that it never holds more than one connection to the manager
/// while a long poll stays open.
fn one_connection_per_agent(m: &Manager) {
    let mut agent = m.agent("local", 2, &[]);
    let pid = agent.child.id();
    let mut most = 0;
    let mut seen = HashSet::new();
    let beats = poll_until(LONG, || {
        let listed = agent.child.try_wait().unwrap().is_none().then(|| {
            let (s, list) = m.http().get("/v1/agents", &m.admin);
            assert_eq!(s, 200, "{list}");
            list.as_array().unwrap().first().cloned()
        });
        let a = listed.flatten()?;
        assert_eq!(a["state"], "active", "{a}");
        // Counted once registered, whose connection closes with its own client.
        if seen.insert(a["last_seen_ms"].as_u64().unwrap()) && seen.len() > 2 {
            most = most.max(connections_to(pid, m.port));
        }
        (seen.len() >= 8).then_some(seen.len())
    });
    assert!(
        beats.is_some(),
        "the agent stopped beating:\n{}",
        agent.log()
    );
    assert_eq!(
        most, 1,
        "connections the agent held to the manager while long-polling and beating"
    );
    assert!(agent.child.try_wait().unwrap().is_none(), "{}", agent.log());
}

#[test]
fn an_agent_beats_and_long_polls_on_one_http2_connection() {
    let dir = tempfile::tempdir().unwrap();
    // Heartbeats every 250 ms.
    let m = Manager::start(dir.path(), 1.0);
    one_connection_per_agent(&m);
}

#[test]
fn an_agent_agrees_on_http2_by_alpn_under_tls() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_tls(dir.path(), 1.0);
    one_connection_per_agent(&m);
}

fn register(m: &Manager, token: &str, host: &str) -> Value {
    let (s, r) = m.http().post(
        "/v1/agents",
        token,
        &json!({"platform": "local", "hostname": host, "cores": 1, "memory_mb": 1024}),
    );
    assert_eq!(s, 200, "{r}");
    r
}

#[test]
fn the_manager_stretches_the_heartbeat_interval_as_agents_join_and_agents_follow() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hetpilot.toml");
    std::fs::write(&config, "heartbeats_per_second = 1\n").unwrap();
    // A 1 s lease: four beats of 250 ms while fewer agents than one beat per second of
    // them allows; with more, a beat a second per agent and four of them per lease.
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        1.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    let _agent = m.agent("local", 1, &[]);
    let id = poll_until(LONG, || agent_listing_opt(&m)).expect("the agent registers");
    let id = id["agent"].clone();
    let token = m.agent_token("local");
    let mut last = Value::Null;
    for i in 0..5 {
        last = register(&m, &token, &format!("silent-{i}"));
    }
    // Six agents: a beat every 6 s each, a 24 s lease.
    assert_eq!(last["heartbeat_interval_ms"], 6_000, "{last}");
    assert_eq!(last["lease_timeout_ms"], 24_000, "{last}");
    // The running agent learns it from its next heartbeat answer and beats 6 s apart
    // from then on (its long poll, woken by scheduling rounds, moves `last_seen_ms` in
    // between at times: the longest gap is the interval).
    let mut seen: Vec<u64> = Vec::new();
    let told = poll_until(LONG, || {
        let (s, list) = m.http().get("/v1/agents", &m.admin);
        assert_eq!(s, 200, "{list}");
        let a = list
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == id)
            .unwrap()
            .clone();
        assert_eq!(a["state"], "active", "{a}");
        let at = a["last_seen_ms"].as_u64().unwrap();
        if seen.last() != Some(&at) {
            seen.push(at);
        }
        seen.windows(2)
            .map(|w| w[1] - w[0])
            .find(|gap| *gap >= 5_000)
    });
    let told = told.unwrap_or_else(|| panic!("the agent never beat 6 s apart: {seen:?}"));
    assert!(
        told < 8_000,
        "{told} ms between two of the agent's beats; seen at {seen:?}"
    );
    // The silent ones were registered more than a configured lease ago and are not lost.
    let (_, list) = m.http().get("/v1/agents", &m.admin);
    let lost: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["state"] != "active")
        .collect();
    assert!(lost.is_empty(), "{lost:?}");
}

fn agent_listing_opt(m: &Manager) -> Option<Value> {
    let (s, list) = m.http().get("/v1/agents", &m.admin);
    assert_eq!(s, 200, "{list}");
    list.as_array().unwrap().first().cloned()
}
