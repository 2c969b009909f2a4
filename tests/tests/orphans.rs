//! Tasks die with their agent: an agent SIGKILLed (as the OOM killer does) leaves no
//! process of its tasks running, neither the task's own process nor what it started.

use hetpilot_e2e::{poll_until, signal, Manager};
use std::path::Path;
use std::time::Duration;

/// The processes (pid and command line) whose environment holds `marker`: the task's
/// processes, found from outside any sandbox through /proc.
fn marked(marker: &str) -> Vec<(u32, String)> {
    let needle = format!("ORPHAN_MARK={marker}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .filter(|pid| !hetpilot_e2e::proc_stats::is_dead(*pid))
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            (pid, cmd)
        })
        .collect()
}

/// Kills whatever of the task is left when the test ends, so a failure leaves no stray.
struct Sweep(String);

impl Drop for Sweep {
    fn drop(&mut self) {
        for (pid, _) in marked(&self.0) {
            // SAFETY: signalling a process this test's task started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

/// How the agent is killed.
#[derive(PartialEq)]
enum Kill {
    /// The agent alone.
    Agent,
    /// Its spawn helper first, then the agent.
    HelperThenAgent,
}

/// Starts an agent (with `flags`) running one task, a shell loop waiting on a gate file
/// that never comes, with a `sleep` it started in the background; SIGKILLs the agent (as
/// `kill` says) and returns what is left of the processes `must_die` picks out (by command
/// line) after at most 10 s (polled).
fn kill_an_agent_with_a_task(
    dir: &Path,
    flags: &[&str],
    kill: Kill,
    must_die: impl Fn(&str) -> bool,
) -> Vec<(u32, String)> {
    let marker = dir.display().to_string();
    let _sweep = Sweep(marker.clone());
    let m = Manager::start(dir, 30.0);
    let gate = dir.join("gate");
    let command = format!(
        "sh -c 'sleep 600 & while [ ! -e {} ]; do sleep 0.05; done'",
        gate.display()
    );
    m.submit(serde_json::json!({
        "name": "gated",
        "command": command,
        "env": {"ORPHAN_MARK": marker},
        "tasks": {"array": {"start": 0, "end": 0}},
    }));
    let agent = m.agent("local", 1, flags);
    // The shell and its background sleep (its loop's short sleeps come and go).
    let mut running = Vec::new();
    let started = poll_until(Duration::from_secs(60), || {
        running = marked(&marker);
        let sleeping = running.iter().any(|(_, cmd)| cmd.starts_with("sleep 600"));
        (sleeping && running.iter().any(|(_, cmd)| cmd.contains("sh -c "))).then_some(())
    });
    assert!(
        started.is_some(),
        "the task did not start: {running:?}\nagent log:\n{}",
        agent.log()
    );
    if kill == Kill::HelperThenAgent {
        let helper = spawn_helper(agent.child.id()).expect("the agent has a spawn helper");
        // SAFETY: signalling the helper of the agent this test started.
        unsafe { libc::kill(helper as i32, libc::SIGKILL) };
    }
    signal(&agent.child, libc::SIGKILL);
    let mut left = Vec::new();
    poll_until(Duration::from_secs(10), || {
        left = marked(&marker);
        left.retain(|(_, cmd)| must_die(cmd));
        left.is_empty().then_some(())
    });
    if !left.is_empty() {
        eprintln!(
            "running before the agent was killed: {running:?}\nagent log:\n{}",
            agent.log()
        );
    }
    left
}

/// Kills the agent (alone) of a task in `dir`, run with `flags`; asserts none of it is left.
fn a_killed_agent_takes_its_task_along(dir: &Path, flags: &[&str]) {
    let left = kill_an_agent_with_a_task(dir, flags, Kill::Agent, |_| true);
    assert!(
        left.is_empty(),
        "10 s after the agent was SIGKILLed its task still runs: {left:?}"
    );
}

/// The agent's spawn helper: its child named `hetpilot-spawn`.
fn spawn_helper(agent: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let ppid = stat
                    .rsplit(')')
                    .next()
                    .and_then(|s| s.split_whitespace().nth(1));
                stat.contains("(hetpilot-spawn)") && ppid == Some(agent.to_string().as_str())
            })
        })
}

#[test]
fn a_sigkilled_agents_task_and_its_children_die_with_it() {
    let dir = tempfile::tempdir().unwrap();
    a_killed_agent_takes_its_task_along(dir.path(), &[]);
}

/// Without the spawn helper (killed first), the task's own process still dies with the
/// agent (what it started then outlives it: the helper kills those).
#[test]
fn a_task_dies_with_its_agent_even_when_the_spawn_helper_went_first() {
    let dir = tempfile::tempdir().unwrap();
    let shell = |cmd: &str| cmd.contains("sh -c ");
    let left = kill_an_agent_with_a_task(dir.path(), &[], Kill::HelperThenAgent, shell);
    assert!(
        left.is_empty(),
        "10 s after the agent was SIGKILLed the task's shell still runs: {left:?}"
    );
}

#[test]
fn a_sigkilled_agents_sandboxed_task_dies_with_it() {
    let works = std::process::Command::new("bwrap")
        .args([
            "--unshare-pid",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "true",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        eprintln!(
            "skipped: bubblewrap (`bwrap`) is missing or cannot make a sandbox on this machine \
             (install it: `apt-get install -y bubblewrap`)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    a_killed_agent_takes_its_task_along(dir.path(), &["--sandbox", "bwrap"]);
}

/// The check run after the tests names a task process that outlived its agent (one with
/// the variables an agent sets for tasks, run by this checkout's tests), and fails.
#[test]
fn the_stray_check_names_a_task_left_running() {
    let mut task = std::process::Command::new("sleep")
        .arg("600")
        .env("HETPILOT_TASK", "7.3")
        .env("HETPILOT_APP", "7")
        .env("CARGO_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR"))
        .spawn()
        .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/check-no-stray-agents.sh");
    // A target dir holding no agent: only tasks can be found.
    let no_agents = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&script)
        .arg(no_agents.path())
        .arg("0")
        .output()
        .unwrap();
    let _ = task.kill();
    let _ = task.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("pid {} ", task.id())) && stderr.contains("HETPILOT_TASK=7.3"),
        "{stderr}"
    );
}

/// A task the agent has reaped is no longer the helper's to kill: a process group number
/// is free for others once its processes are gone, so the helper must hear of each reap
/// before the agent can die. Here the task's shell ends (reaped, its result reported) and
/// leaves a background `sleep` in its group; the agent SIGKILLed afterwards must not take
/// that group along.
#[test]
fn a_reaped_tasks_group_is_not_killed_with_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().display().to_string();
    let _sweep = Sweep(marker.clone());
    let m = Manager::start(dir.path(), 30.0);
    let app = m.submit(serde_json::json!({
        "name": "leaves-a-sleep",
        "command": "sh -c 'sleep 600 >/dev/null 2>&1 &'",
        "env": {"ORPHAN_MARK": marker},
        "tasks": {"array": {"start": 0, "end": 0}},
    }));
    let agent = m.agent("local", 1, &[]);
    m.wait_finished(app, Duration::from_secs(60));
    let sleeping = || {
        marked(&marker)
            .into_iter()
            .filter(|(_, cmd)| cmd.starts_with("sleep 600"))
            .count()
    };
    assert_eq!(sleeping(), 1, "the task's background sleep should run");
    let helper = spawn_helper(agent.child.id()).expect("the agent has a spawn helper");
    signal(&agent.child, libc::SIGKILL);
    // The helper sees the agent's socket close, kills the groups it still holds and ends;
    // once it has, the reaped task's group must be untouched.
    let helper_gone = poll_until(Duration::from_secs(10), || {
        hetpilot_e2e::proc_stats::is_dead(helper).then_some(())
    });
    assert!(helper_gone.is_some(), "the spawn helper outlived its agent");
    assert_eq!(
        sleeping(),
        1,
        "the helper killed the group of a task the agent had already reaped"
    );
}
