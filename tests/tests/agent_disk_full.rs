//! An agent whose work directory fills (a 4 MiB tmpfs, filled with a ballast file) fails
//! the task whose output, or whose fetched input, finds no room, with a reason naming the
//! directory, not a panic or a lost slot, and runs its next task once the ballast is
//! removed. Mounting the tmpfs
//! needs root: elsewhere the test says it skipped.

use hetpilot_e2e::tmpfs::Tmpfs;
use hetpilot_e2e::{bin, wait_until, Agent, Manager};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// An agent with one slot working in `work_dir`, logging to `log` (outside the work
/// directory, whose disk fills).
fn agent(m: &Manager, work_dir: &Path, log: &Path) -> Agent {
    let child = Command::new(bin("hetpilot-agent"))
        .args(["--manager", &m.url, "--platform", "local", "--slots", "1"])
        .arg("--work-dir")
        .arg(work_dir)
        .env("HETPILOT_AGENT_TOKEN", m.agent_token("local"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("starting hetpilot-agent");
    Agent {
        child,
        work_dir: work_dir.to_path_buf(),
    }
}

/// One task printing `bytes` bytes to stdout, run once.
fn loud(name: &str, bytes: u64) -> serde_json::Value {
    json!({
        "name": name,
        "command": format!("head -c {bytes} /dev/zero"),
        "tasks": {"array": {"start": 0, "end": 0}},
        "max_attempts": 1,
    })
}

fn run_of(m: &Manager, app: u64) -> (String, Option<String>) {
    m.db()
        .query_row(
            "SELECT outcome, error FROM attempts WHERE app_id = ?1",
            [app as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

/// A manager, and an agent working on a 4 MiB tmpfs; None where no tmpfs can be mounted.
struct Site {
    root: tempfile::TempDir,
    disk: Tmpfs,
    m: Manager,
    agent: Agent,
}

fn site() -> Option<Site> {
    let root = tempfile::tempdir().unwrap();
    let disk = Tmpfs::mount(&root.path().join("work"), 4 << 20)?;
    let manager_dir = root.path().join("manager");
    std::fs::create_dir(&manager_dir).unwrap();
    let m = Manager::start(&manager_dir, 30.0);
    let agent = agent(&m, &disk.path, &root.path().join("agent.log"));
    wait_until("the agent to register", Duration::from_secs(60), || {
        let (_, agents) = m.http().get("/v1/agents", &m.admin);
        (agents.as_array()?.len() == 1).then_some(())
    });
    Some(Site {
        root,
        disk,
        m,
        agent,
    })
}

impl Site {
    /// The agent runs on, and has not panicked.
    fn assert_agent_runs_on(&mut self) {
        assert_eq!(
            self.agent.child.try_wait().unwrap(),
            None,
            "the agent runs on"
        );
        let log = std::fs::read_to_string(self.root.path().join("agent.log")).unwrap();
        assert!(!log.contains("panicked"), "{log}");
    }
}

#[test]
fn a_full_work_directory_fails_the_task_with_a_clear_reason_and_keeps_the_slot() {
    let Some(mut s) = site() else { return };
    let ballast = s.disk.fill("ballast");
    let full = s.m.submit(loud("full", 1 << 20));
    let summary = s.m.wait_finished(full, Duration::from_secs(60));
    assert_eq!(summary["counts"]["failed"], 1, "{summary}");
    let (outcome, error) = run_of(&s.m, full);
    let error = error.unwrap_or_default();
    assert_eq!(outcome, "failed", "{error}");
    let dir = s.disk.path.display().to_string();
    assert!(
        error.contains(&format!("the work directory {dir} is full")),
        "{error}"
    );
    assert!(error.contains("stdout"), "{error}");

    std::fs::remove_file(&ballast).unwrap();
    let after = s.m.submit(loud("after", 1 << 20));
    let summary = s.m.wait_finished(after, Duration::from_secs(60));
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    assert_eq!(run_of(&s.m, after), ("success".to_string(), None));
    s.assert_agent_runs_on();
}

#[test]
fn an_input_that_finds_no_room_fails_its_task_naming_the_directory_and_keeps_the_slot() {
    let Some(mut s) = site() else { return };
    let alice = s.m.create_user("alice");
    let status = reqwest::blocking::Client::new()
        .put(format!("{}/v1/files/input.bin", s.m.url))
        .bearer_auth(&alice)
        .body(vec![7u8; 1 << 20])
        .send()
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 201);
    let spec = json!({
        "name": "staged",
        "command": "wc -c input.bin",
        "tasks": {"array": {"start": 0, "end": 0}},
        "inputs": ["input.bin"],
        "max_attempts": 1,
    });
    let ballast = s.disk.fill("ballast");
    let (code, body) = s.m.http().post("/v1/apps", &alice, &spec);
    assert_eq!(code, 200, "{body}");
    let full = body["app"].as_u64().unwrap();
    let summary = s.m.wait_finished(full, Duration::from_secs(60));
    assert_eq!(summary["counts"]["failed"], 1, "{summary}");
    let (_, error) = run_of(&s.m, full);
    let error = error.unwrap_or_default();
    let dir = s.disk.path.display().to_string();
    assert!(
        error.contains(&format!("the directory {dir}/")) && error.contains("is full"),
        "{error}"
    );
    assert!(error.contains("input.bin"), "{error}");

    std::fs::remove_file(&ballast).unwrap();
    let (code, body) = s.m.http().post("/v1/apps", &alice, &spec);
    assert_eq!(code, 200, "{body}");
    let after = body["app"].as_u64().unwrap();
    let summary = s.m.wait_finished(after, Duration::from_secs(60));
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    s.assert_agent_runs_on();
}
