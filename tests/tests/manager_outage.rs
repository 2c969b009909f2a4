//! An agent bounds how long it waits for a manager that stopped answering
//! (`--give-up-secs`): it exits with status 4 once the manager has been gone that long,
//! and rides out a manager that comes back sooner, keeping its registration and its task.

use hetpilot_e2e::{array_app, bin, free_port, wait_until, Agent, Manager};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn an_agent_whose_manager_never_answers_exits_4_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    // A real listener, closed: every connection to its port is refused.
    let port = free_port();
    let mut a = Agent::start(
        &format!("http://127.0.0.1:{port}"),
        "local",
        "no-manager-token",
        1,
        &dir.path().join("agent"),
        &["--give-up-secs", "2"],
    );
    assert_eq!(a.wait_exit(Duration::from_secs(60)), Some(4), "{}", a.log());
    assert!(
        a.log().contains("has not answered for"),
        "the agent says why it stopped: {}",
        a.log()
    );
}

#[test]
fn give_up_secs_is_bounded() {
    for bad in ["0", "604801", "-1", "x"] {
        let out = std::process::Command::new(bin("hetpilot-agent"))
            .args(["--manager", "http://127.0.0.1:1"])
            .arg(format!("--give-up-secs={bad}"))
            .env_remove("HETPILOT_GIVE_UP_SECS")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("--give-up-secs"), "{bad}: {err}");
    }
}

/// The agent's view of itself in `GET /v1/agents` (the test's only agent).
fn the_agent(m: &Manager) -> serde_json::Value {
    let (status, agents) = m.http().get("/v1/agents", &m.admin);
    assert_eq!(status, 200, "{agents}");
    let agents = agents.as_array().unwrap();
    assert_eq!(
        agents.len(),
        1,
        "one registration, never a second: {agents:?}"
    );
    agents[0].clone()
}

#[test]
fn a_manager_back_within_the_window_keeps_its_agent_and_task() {
    const WINDOW_MS: u64 = 10_000;
    let dir = tempfile::tempdir().unwrap();
    let (pid_file, gate) = (dir.path().join("task.pid"), dir.path().join("gate"));
    let mut m = Manager::start(dir.path(), 10.0);
    let port = m.port;
    // The task runs until the test opens its gate, across the manager's outage.
    let cmd = format!(
        "sh -c 'echo $$ > {}; while [ ! -e {} ]; do sleep 0.05; done'",
        pid_file.display(),
        gate.display()
    );
    let app = m.submit(array_app("outage", &cmd, 1));
    let give_up = (WINDOW_MS / 1000).to_string();
    let mut a = m.agent("local", 1, &["--give-up-secs", &give_up]);
    wait_until("the task to start", Duration::from_secs(60), || {
        std::fs::read_to_string(&pid_file)
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    });
    // The outage comes after the agent has lived longer than its window, so only the
    // manager's answers since then, not the agent's start, keep it from giving up.
    let registered = the_agent(&m)["registered_at_ms"].as_u64().unwrap();
    wait_until(
        "the agent to be in contact for longer than its window",
        Duration::from_secs(60),
        || (the_agent(&m)["last_seen_ms"].as_u64()? > registered + WINDOW_MS).then_some(()),
    );
    m.kill();
    let killed_ms = now_ms();
    let m = Manager::start_on(dir.path(), port, 10.0, &[]);
    assert!(
        now_ms() < killed_ms + WINDOW_MS,
        "the restart came within the window"
    );
    // The agent still talks to the manager once the window has passed since the kill
    // (the restarted manager set every agent's last_seen to its own start).
    wait_until(
        "the agent to be heard after the window",
        Duration::from_secs(60),
        || (the_agent(&m)["last_seen_ms"].as_u64()? > killed_ms + WINDOW_MS + 1000).then_some(()),
    );
    assert_eq!(a.child.try_wait().unwrap(), None, "{}", a.log());
    std::fs::write(&gate, b"").unwrap();
    let summary = m.wait_finished(app, Duration::from_secs(60));
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    let agent = the_agent(&m);
    assert_eq!(agent["state"], "active", "{agent}");
    let ran_on: i64 = m
        .db()
        .query_row(
            "SELECT agent_id FROM attempts WHERE app_id = ?1 AND outcome = 'success'",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ran_on as u64, agent["agent"].as_u64().unwrap());
    assert!(!a.log().contains("gave up"), "{}", a.log());
    assert_eq!(a.child.try_wait().unwrap(), None, "{}", a.log());
}
