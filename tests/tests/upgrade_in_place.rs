//! A manager upgraded in place while its agents keep running loses nothing: the old
//! manager stops (SIGTERM) with tasks running and leased, the new one starts on the same
//! data directory and port, and the agents ride it out: every task ends done, each ran
//! once, and no agent registered again.
//!
//! The old build is the one in `HETPILOT_PREVIOUS_BIN_DIR` (its `hetpilot` and
//! `hetpilot-agent`) when that is set, as a release check does with the previous release;
//! without it this build replaces itself, which takes the same path (stop, reopen, agents
//! reconnect) without a schema migration.

use hetpilot_e2e::{array_app, bin, free_port, signal, wait_until, Agent, Manager};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);
const TASKS: u64 = 40;

/// The old build's binary `name`.
fn previous(name: &str) -> PathBuf {
    match std::env::var_os("HETPILOT_PREVIOUS_BIN_DIR") {
        Some(dir) => PathBuf::from(dir).join(name),
        None => bin(name),
    }
}

fn counts(m: &Manager, app: u64) -> Value {
    let (status, summary) = m.http().get(&format!("/v1/apps/{app}"), &m.admin);
    assert_eq!(status, 200, "{summary}");
    summary["counts"].clone()
}

fn agent_ids(m: &Manager) -> BTreeSet<u64> {
    let (status, agents) = m.http().get("/v1/agents", &m.admin);
    assert_eq!(status, 200, "{agents}");
    agents
        .as_array()
        .unwrap()
        .iter()
        .inspect(|a| assert_eq!(a["state"], "active", "{a}"))
        .map(|a| a["agent"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_manager_upgraded_in_place_while_agents_run_loses_no_task() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let port = free_port();
    let mut old = Manager::start_program(&previous("hetpilot"), dir.path(), port, 10.0, &[], &[]);
    let token = old.agent_token("local");
    let mut agents: Vec<Agent> = (0..2)
        .map(|i| {
            Agent::start_program(
                &previous("hetpilot-agent"),
                &old.url,
                "local",
                &token,
                2,
                &dir.path().join(format!("agent-{i}")),
                &[],
                &[],
            )
        })
        .collect();
    // Each run appends a line to its task's own file: a task run twice shows two.
    let command = format!("sh -c 'echo run >> {}/{{}}; sleep 0.3'", runs.display());
    let app = old.submit(array_app("upgraded", &command, TASKS));
    wait_until("tasks to be done and running", LONG, || {
        let c = counts(&old, app);
        (c["done"].as_u64()? >= 4 && c["running"].as_u64()? >= 1).then_some(())
    });
    let before = agent_ids(&old);
    assert_eq!(before.len(), 2, "{before:?}");
    signal(&old.child, libc::SIGTERM);
    old.child.wait().unwrap();
    drop(old);
    let m = Manager::start_on(dir.path(), port, 10.0, &[]);
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], TASKS, "{summary}");
    for task in 0..TASKS {
        let ran = std::fs::read_to_string(runs.join(task.to_string())).unwrap_or_default();
        assert_eq!(ran.lines().count(), 1, "task {task} ran {ran:?}");
    }
    // The same agents, still running, take the new manager's work.
    assert_eq!(agent_ids(&m), before);
    let after = m.submit(array_app("after", "true", 4));
    assert_eq!(m.wait_finished(after, LONG)["counts"]["done"], 4);
    assert_eq!(agent_ids(&m), before);
    for a in &mut agents {
        assert_eq!(a.child.try_wait().unwrap(), None, "{}", a.log());
    }
}
