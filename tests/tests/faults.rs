//! Faults: the manager SIGKILLed mid-run and restarted, and agents SIGKILLed.

use hetpilot_e2e::proc_stats::is_dead;
use hetpilot_e2e::{array_app, signal, wait_until, Manager};
use std::collections::HashMap;
use std::time::Duration;

fn count(m: &Manager, sql: &str, app: u64) -> i64 {
    m.db().query_row(sql, [app as i64], |r| r.get(0)).unwrap()
}

/// Every task appends its index to `log` when it runs; returns how often each index ran.
fn runs(log: &std::path::Path) -> HashMap<u64, u32> {
    let mut seen = HashMap::new();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        *seen.entry(line.trim().parse::<u64>().unwrap()).or_default() += 1;
    }
    seen
}

#[test]
fn a_manager_killed_mid_run_and_restarted_completes_every_task_exactly_once() {
    const N: u64 = 10_000;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs.log");
    let mut m = Manager::start(dir.path(), 10.0);
    let port = m.port;
    let mut a1 = m.agent("local", 6, &[]);
    let mut a2 = m.agent("local", 6, &[]);
    let cmd = format!("sh -c 'echo $HETPILOT_INDEX >> {}'", log.display());
    let app = m.submit(array_app("exactly-once", &cmd, N));
    wait_until(
        "a quarter of the tasks to finish",
        Duration::from_secs(300),
        || {
            (count(
                &m,
                "SELECT COUNT(*) FROM tasks WHERE app_id = ?1 AND state = 3",
                app,
            ) >= (N / 4) as i64)
                .then_some(())
        },
    );
    m.kill();
    let done_at_kill = count(
        &m,
        "SELECT COUNT(*) FROM tasks WHERE app_id = ?1 AND state = 3",
        app,
    );
    assert!(done_at_kill < N as i64, "the kill came mid-run");
    // The agents keep running and retrying while the manager is down, then reconnect.
    let m = Manager::start_on(dir.path(), port, 10.0, &[]);
    let summary = m.wait_finished(app, Duration::from_secs(600));
    assert_eq!(summary["counts"]["done"], N, "{summary}");
    // The queues count a report just before the store commits it: wait for the store.
    let stored = wait_until(
        "the last results to be committed",
        Duration::from_secs(60),
        || {
            let n = count(
                &m,
                "SELECT COUNT(*) FROM tasks WHERE app_id = ?1 AND state = 3",
                app,
            );
            (n >= N as i64).then_some(n)
        },
    );
    assert_eq!(stored, N as i64);
    assert_eq!(
        count(
            &m,
            "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND outcome = 'success'",
            app
        ),
        N as i64,
        "one recorded completion per task"
    );
    let seen = runs(&log);
    assert_eq!(seen.len() as u64, N, "every task ran");
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "tasks that ran more than once: {twice:?}");
    for a in [&mut a1, &mut a2] {
        signal(&a.child, libc::SIGTERM);
        assert_eq!(a.wait_exit(Duration::from_secs(60)), Some(0), "{}", a.log());
    }
}

#[test]
fn tasks_of_a_killed_agent_are_rerun_elsewhere_after_the_lease_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 1.0);
    let mut doomed = m.agent("local", 3, &[]);
    let app = m.submit(array_app("rerun", "sleep 2", 3));
    wait_until(
        "the doomed agent to run all three",
        Duration::from_secs(60),
        || {
            (count(
                &m,
                "SELECT COUNT(*) FROM tasks WHERE app_id = ?1 AND state = 2",
                app,
            ) == 3)
                .then_some(())
        },
    );
    signal(&doomed.child, libc::SIGKILL);
    let _ = doomed.child.wait();
    let _rescuer = m.agent("local", 3, &[]);
    let summary = m.wait_finished(app, Duration::from_secs(120));
    assert_eq!(summary["counts"]["done"], 3, "{summary}");
    // The queues count a result just before the store commits it: wait for the commit.
    let rerun_ok =
        "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND attempt = 2 AND outcome = 'success'";
    let stored = wait_until("the reruns to be stored", Duration::from_secs(30), || {
        let n = count(&m, rerun_ok, app);
        (n >= 3).then_some(n)
    });
    assert_eq!(stored, 3);
    let lost: i64 = count(&m, "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND attempt = 1 AND error LIKE '%missed heartbeats%'", app);
    assert_eq!(lost, 3);
    let (_, agents) = m.http().get("/v1/agents", &m.admin);
    assert_eq!(agents[0]["state"], "lost");
}

#[test]
fn an_agent_whose_manager_is_gone_for_good_kills_its_task_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("task.pid");
    let mut m = Manager::start(dir.path(), 30.0);
    let cmd = format!("sh -c 'echo $$ > {}; exec sleep 600'", pid_file.display());
    m.submit(array_app("orphaned", &cmd, 1));
    let mut a = m.agent("local", 1, &["--give-up-secs", "2"]);
    let pid: u32 = wait_until("the task to start", Duration::from_secs(60), || {
        std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
    });
    assert!(!is_dead(pid), "the task runs");
    m.kill();
    assert_eq!(a.wait_exit(Duration::from_secs(60)), Some(4), "{}", a.log());
    assert!(
        a.log().contains("has not answered for"),
        "the agent says why it stopped: {}",
        a.log()
    );
    wait_until("the task to be killed", Duration::from_secs(10), || {
        is_dead(pid).then_some(())
    });
}

/// The pid of the process whose environment holds `marker` (a task's, found from outside
/// through /proc).
fn task_pid(marker: &str) -> Option<i32> {
    let needle = format!("FAULT_MARK={marker}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        env.split(|b| *b == 0)
            .any(|kv| kv == needle.as_bytes())
            .then_some(pid)
    })
}

/// A batch system stopping a job may signal a task before its agent (Slurm without
/// cgroups signals the job's processes one by one): the run then went down with the pilot,
/// and is handed back, not counted as the task's failure.
#[test]
fn a_task_signalled_just_before_its_agent_is_handed_back_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().display().to_string();
    let m = Manager::start(dir.path(), 30.0);
    let mut spec = array_app("stopped", "sleep 30", 1);
    spec["max_attempts"] = 1.into();
    spec["env"] = serde_json::json!({"FAULT_MARK": marker});
    let app = m.submit(spec);
    let mut agent = m.agent("local", 1, &[]);
    let pid = wait_until("the task to run", Duration::from_secs(60), || {
        task_pid(&marker)
    });
    // The task first and, once it has died, the agent.
    // SAFETY: signalling the task this test's agent started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    wait_until("the task to die", Duration::from_secs(30), || {
        is_dead(pid as u32).then_some(())
    });
    signal(&agent.child, libc::SIGTERM);
    assert_eq!(
        agent.wait_exit(Duration::from_secs(60)),
        Some(0),
        "{}",
        agent.log()
    );
    let state = wait_until(
        "the task to be handed back",
        Duration::from_secs(30),
        || {
            let (status, t) = m.http().get(&format!("/v1/apps/{app}/tasks"), &m.admin);
            assert_eq!(status, 200, "{t}");
            let state = t[0]["state"].as_str().unwrap_or_default().to_string();
            (state != "running" && state != "leased").then_some(state)
        },
    );
    assert_eq!(state, "waiting", "{}", agent.log());
}
