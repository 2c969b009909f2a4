//! The agent as a trust boundary: what a submitted task or application can do to the agent
//! and to other users' tasks on it. Hostile timeouts, the registration token's exposure to
//! tasks, the agent's work directory, and the bubblewrap sandbox between users' tasks.

use hetpilot_e2e::{array_app, signal, Manager};
use serde_json::{json, Value};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

fn tasks(m: &Manager, app: u64, state: &str) -> Vec<Value> {
    let (s, b) = m.http().get(
        &format!("/v1/apps/{app}/tasks?state={state}&limit=100000"),
        &m.admin,
    );
    assert_eq!(s, 200, "{b}");
    b.as_array().unwrap().clone()
}

/// The probe that jammed an agent: `--timeout 9223372036854775807s` is refused at submit,
/// naming the field, through the API and the CLI.
#[test]
fn a_timeout_past_the_bound_is_refused_at_submit() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let mut spec = array_app("huge", "/bin/sleep 2", 2);
    spec["timeout_secs"] = json!(9_223_372_036_854_775_807u64);
    let (s, b) = m.http().post("/v1/apps", &m.admin, &spec);
    assert_eq!(s, 400, "{b}");
    assert!(b.to_string().contains("timeout_secs"), "{b}");
    let out = m.cli(&[
        "submit",
        "--array",
        "1-2",
        "--timeout",
        "9223372036854775807s",
        "--",
        "/bin/sleep",
        "2",
    ]);
    assert!(!out.status.success(), "the CLI submit must fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("timeout"), "{err}");
}

/// The longest allowed timeout runs and reports like any task, a short one still kills,
/// and the agent still drains on SIGTERM afterwards (its slots were freed).
#[test]
fn tasks_with_long_and_short_timeouts_free_their_slots() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let mut agent = m.agent("local", 2, &[]);
    let mut long = array_app("long", "/bin/sleep 0.5", 2);
    long["timeout_secs"] = json!(hetpilot_shared::spec::MAX_TIMEOUT_SECS);
    let long = m.submit(long);
    let mut short = array_app("short", "/bin/sleep 30", 1);
    short["timeout_secs"] = json!(1);
    short["max_attempts"] = json!(1);
    let short = m.submit(short);
    assert_eq!(m.wait_finished(long, LONG)["counts"]["done"], 2);
    m.wait_finished(short, LONG);
    let failed = tasks(&m, short, "failed");
    assert_eq!(failed[0]["last"]["outcome"], "timed_out", "{failed:?}");
    let wall: f64 = m
        .db()
        .query_row(
            "SELECT wall_ms FROM attempts WHERE app_id = ?1",
            [short as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert!((900.0..20_000.0).contains(&wall), "killed at 1 s: {wall}");
    signal(&agent.child, libc::SIGTERM);
    assert_eq!(agent.wait_exit(LONG), Some(0), "{}", agent.log());
}

/// The text of a finished task's stdout file.
fn stdout_of(m: &Manager, task: &str) -> String {
    let (s, detail) = m.http().get(&format!("/v1/tasks/{task}"), &m.admin);
    assert_eq!(s, 200, "{detail}");
    let path = detail["last"]["stdout_path"]
        .as_str()
        .unwrap_or_else(|| panic!("no stdout: {detail}"));
    std::fs::read_to_string(path).unwrap()
}

/// A script that prints what a task can learn of the agent (`pid`) and of itself.
fn snoop(pid: u32) -> String {
    format!(
        "sh -c 'echo environ:; cat /proc/{pid}/environ 2>&1 | tr \"\\0\" \"\\n\"; \
         echo cmdline:; cat /proc/{pid}/cmdline 2>&1 | tr \"\\0\" \" \"; \
         echo mem:; head -c 1 /proc/{pid}/mem >/dev/null 2>&1 && echo mem-readable; \
         echo own:; env'"
    )
}

/// An agent started as the README shows, with the token in its environment: a task finds
/// the token neither in the agent's /proc files nor in its own environment.
#[test]
fn a_task_cannot_read_the_agents_token_from_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let token = m.agent_token("local");
    let agent =
        hetpilot_e2e::Agent::start(&m.url, "local", &token, 1, &dir.path().join("agent"), &[]);
    let app = m.submit(json!({"name": "snoop", "command": snoop(agent.child.id()),
        "tasks": {"array": {"start": 0, "end": 0}}}));
    assert_eq!(m.wait_finished(app, LONG)["counts"]["done"], 1);
    let out = stdout_of(&m, &format!("{app}.0"));
    assert!(out.contains("cmdline:"), "{out}");
    assert!(
        out.contains("--platform local"),
        "the task did read the agent's cmdline: {out}"
    );
    assert!(!out.contains(&token), "the token leaked to a task:\n{out}");
    let own = out.split("own:").nth(1).unwrap();
    assert!(!own.contains("HETPILOT_AGENT_TOKEN"), "{own}");
    assert!(own.contains("HETPILOT_TASK="), "{own}");
}

/// The same with an agent running as an ordinary user (its tasks share its uid): being
/// non-dumpable, the agent's /proc files and memory are closed to them.
#[test]
fn a_task_of_the_same_uid_cannot_open_the_agents_proc_files() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let token = m.agent_token("local");
    let work = dir.path().join("nobody-agent");
    std::fs::create_dir(&work).unwrap();
    std::os::unix::fs::chown(&work, Some(NOBODY), Some(NOBODY)).unwrap();
    // The manager's data dir is the test's private temp dir: let `nobody` through to its
    // own work dir.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o711),
    )
    .unwrap();
    let log = std::fs::File::create(dir.path().join("nobody-agent.log")).unwrap();
    let mut child = std::process::Command::new(hetpilot_e2e::bin("hetpilot-agent"))
        .args(["--manager", &m.url, "--platform", "local", "--slots", "1"])
        .arg("--work-dir")
        .arg(&work)
        .env("HETPILOT_AGENT_TOKEN", &token)
        .uid(NOBODY)
        .gid(NOBODY)
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let app = m.submit(json!({"name": "snoop", "command": snoop(child.id()),
        "tasks": {"array": {"start": 0, "end": 0}}}));
    let finished = m.wait_finished(app, LONG);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(finished["counts"]["done"], 1, "{finished}");
    let out = stdout_of(&m, &format!("{app}.0"));
    let environ = out.split("cmdline:").next().unwrap();
    assert!(environ.contains("Permission denied"), "{out}");
    assert!(!out.contains("mem-readable"), "{out}");
    assert!(!out.contains(&token), "the token leaked to a task:\n{out}");
}

const NOBODY: u32 = 65534;

/// A token file others may read is refused with a fix-it message; a one-use file given
/// with `--delete-token-file` is gone once the agent registered.
#[test]
fn token_files_must_be_private_and_one_use_ones_are_deleted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let file = dir.path().join("token");
    std::fs::write(&file, m.agent_token("local")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = |extra: &[&str]| {
        std::process::Command::new(hetpilot_e2e::bin("hetpilot-agent"))
            .args(["--manager", &m.url, "--platform", "local", "--slots", "1"])
            .arg("--work-dir")
            .arg(dir.path().join("agent"))
            .arg("--token-file")
            .arg(&file)
            .args(extra)
            .env_remove("HETPILOT_AGENT_TOKEN")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let refused = run(&[]).wait_with_output().unwrap();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("chmod 600"), "{err}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut agent = run(&["--delete-token-file"]);
    hetpilot_e2e::wait_until("the agent to register", LONG, || {
        let (_, agents) = m.http().get("/v1/agents", &m.admin);
        (agents.as_array().is_some_and(|a| !a.is_empty())).then_some(())
    });
    assert!(!file.exists(), "the one-use token file was deleted");
    let _ = agent.kill();
    let _ = agent.wait();
}

/// A work dir another uid owns (it could swap what is in it under the agent) is refused.
#[test]
fn an_agent_refuses_a_work_dir_of_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = std::process::Command::new(hetpilot_e2e::bin("hetpilot-agent"))
        .args(["--manager", "http://127.0.0.1:9", "--platform", "local"])
        .arg("--work-dir")
        .arg(&theirs)
        .env("HETPILOT_AGENT_TOKEN", "not-used")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("belongs to uid 65534"), "{err}");
}
