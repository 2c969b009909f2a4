//! Real tasks on real agents: measurements, co-runners, retries, timeouts, cancellation,
//! and draining on SIGTERM.

use hetpilot_e2e::{array_app, signal, wait_until, Manager};
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

#[test]
fn applications_run_to_completion_with_measurements_and_co_runners() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _a1 = m.agent("local", 3, &[]);
    let _a2 = m.agent("local", 2, &[]);
    let burn = "sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo out-$HETPILOT_INPUT; echo err >&2'";
    let a = m.submit(array_app("burn", burn, 60));
    let b = m.submit(json!({"name": "lines", "command": "echo {} {index}", "tasks": {"lines": ["x", "y z", "w"]}}));
    m.wait_finished(a, LONG);
    m.wait_finished(b, LONG);
    let done = tasks(&m, a, "done");
    assert_eq!(done.len(), 60);
    let db = m.db();
    let (n, cpu, rss, wall): (i64, f64, i64, f64) = db
        .query_row(
            "SELECT COUNT(*), MIN(user_cpu_ms + sys_cpu_ms), MIN(max_rss_kb), MIN(wall_ms) FROM attempts
             WHERE app_id = ?1 AND outcome = 'success'",
            [a as i64],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(n, 60, "one successful attempt per task");
    assert!(
        cpu > 0.0 && rss > 0 && wall > 0.0,
        "cpu {cpu} rss {rss} wall {wall}"
    );
    let with_any: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND co_runners != '[]'",
            [a as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert!(with_any > 0, "tasks of a 3-slot agent share the node");
    let (s, detail) = m.http().get(&format!("/v1/tasks/{b}.1"), &m.admin);
    assert_eq!(s, 200);
    let out = std::fs::read_to_string(detail["last"]["stdout_path"].as_str().unwrap()).unwrap();
    assert_eq!(
        out, "y z 1\n",
        "the line is one argument, not split by a shell"
    );
    let platforms = m.http().get(&format!("/v1/apps/{a}/report"), &m.admin).1["platforms"].clone();
    assert_eq!(platforms[0]["tasks"], 60);
}

#[test]
fn a_background_process_holding_the_output_does_not_stretch_the_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 1, &[]);
    // The shell exits at once; the background `sleep` keeps its stdout open for 5 s.
    let spec = json!({"name": "bg", "command": "sh -c 'sleep 5 & echo started'",
                      "tasks": {"array": {"start": 0, "end": 0}}});
    let app = m.submit(spec);
    m.wait_finished(app, LONG);
    let (s, detail) = m.http().get(&format!("/v1/tasks/{app}.0"), &m.admin);
    assert_eq!(s, 200, "{detail}");
    let wall: f64 = m
        .db()
        .query_row(
            "SELECT wall_ms FROM attempts WHERE app_id = ?1 AND outcome = 'success'",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        wall < 2500.0,
        "measured the shell, not the sleep: {wall} ms"
    );
    let out = std::fs::read_to_string(detail["last"]["stdout_path"].as_str().unwrap()).unwrap();
    assert_eq!(out, "started\n");
}

#[test]
fn failures_retry_up_to_max_attempts_and_timeouts_kill_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 4, &[]);
    let flaky = m.submit(
        json!({"name": "flaky", "command": "sh -c 'echo boom >&2; exit 3'",
        "tasks": {"array": {"start": 1, "end": 2}}, "max_attempts": 2}),
    );
    let pidfile = dir.path().join("grandchild.pid");
    let slow_cmd = format!("sh -c 'sleep 300 & echo $! > {}; wait'", pidfile.display());
    let slow = m.submit(
        json!({"name": "slow", "command": slow_cmd, "tasks": {"array": {"start": 1, "end": 1}},
        "max_attempts": 1, "timeout_secs": 1}),
    );
    m.wait_finished(flaky, LONG);
    m.wait_finished(slow, LONG);
    let failed = tasks(&m, flaky, "failed");
    assert_eq!(failed.len(), 2);
    assert!(failed.iter().all(|t| t["attempts"] == 2), "{failed:?}");
    assert_eq!(failed[0]["last"]["exit_code"], 3);
    assert!(failed[0]["last"]["output_tail"]
        .as_str()
        .unwrap()
        .contains("boom"));
    let timed_out = tasks(&m, slow, "failed");
    assert_eq!(
        timed_out[0]["last"]["outcome"], "timed_out",
        "{timed_out:?}"
    );
    // The whole process group died, including the backgrounded grandchild.
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(
        "the grandchild to be killed",
        Duration::from_secs(10),
        || {
            // SAFETY: probing a pid with signal 0.
            let alive = unsafe { libc::kill(pid, 0) } == 0
                && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| !s.contains(") Z "));
            (!alive).then_some(())
        },
    );
}

#[test]
fn cancel_ends_waiting_tasks_and_kills_running_ones() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 2, &[]);
    let app = m.submit(array_app("sleepy", "sleep 300", 10));
    wait_until("two tasks running", LONG, || {
        (tasks(&m, app, "running").len() == 2).then_some(())
    });
    let (s, b) = m
        .http()
        .post(&format!("/v1/apps/{app}/cancel"), &m.admin, &json!({}));
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["counts"]["cancelled"], 10);
    let db = m.db();
    wait_until("the killed runs to be reported", LONG, || {
        let n: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND outcome = 'signaled'",
                [app as i64],
                |r| r.get(0),
            )
            .unwrap();
        (n == 2).then_some(())
    });
    assert_eq!(
        tasks(&m, app, "cancelled").len(),
        10,
        "cancelled tasks stay cancelled after their runs end"
    );
}

#[test]
fn sigterm_drains_the_agent_and_gives_back_what_it_did_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let mut agent = m.agent("local", 2, &["--prefetch", "3"]);
    let app = m.submit(array_app("drain", "sleep 1", 8));
    wait_until("two tasks running", LONG, || {
        (tasks(&m, app, "running").len() == 2).then_some(())
    });
    signal(&agent.child, libc::SIGTERM);
    assert_eq!(agent.wait_exit(LONG), Some(0), "{}", agent.log());
    let done = tasks(&m, app, "done").len();
    assert!(done >= 2, "the running tasks finished: {done}");
    assert_eq!(
        tasks(&m, app, "leased").len() + tasks(&m, app, "running").len(),
        0
    );
    assert_eq!(
        tasks(&m, app, "waiting").len(),
        8 - done,
        "prefetched tasks went back to the queue"
    );
    let (_, agents) = m.http().get("/v1/agents", &m.admin);
    assert_eq!(agents[0]["state"], "ended");
    // Another agent finishes the rest.
    let _next = m.agent("local", 4, &[]);
    let s = m.wait_finished(app, LONG);
    assert_eq!(s["counts"]["done"], 8);
}

/// A batch system stopping a job signals the agent and its tasks together: a run killed
/// once its agent was signalled died with its pilot and is handed back (an attempt lost to
/// the infrastructure, not counted against `max_attempts`), while a run killed alone is
/// reported as killed.
#[test]
fn a_run_killed_with_its_agent_is_handed_back_and_one_killed_alone_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let mut agent = m.agent("local", 2, &[]);
    let pids = dir.path().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    let command = format!(
        "sh -c 'echo $$ > {}/$HETPILOT_INDEX.tmp && mv {0}/$HETPILOT_INDEX.tmp {0}/$HETPILOT_INDEX; exec sleep 600'",
        pids.display()
    );
    let mut spec = array_app("killed", &command, 2);
    spec["max_attempts"] = 1.into();
    let app = m.submit(spec);
    let group = |i: u32| -> i32 {
        wait_until("the task to start", LONG, || {
            std::fs::read_to_string(pids.join(i.to_string()))
                .ok()
                .and_then(|t| t.trim().parse().ok())
        })
    };
    let (alone, with_agent) = (group(0), group(1));
    let kill_group = |pid: i32| {
        // SAFETY: signalling the process group of a task this test started.
        assert_eq!(unsafe { libc::kill(-pid, libc::SIGKILL) }, 0);
    };

    kill_group(alone);
    let failed = wait_until("the run killed alone to be reported", LONG, || {
        tasks(&m, app, "failed").first().cloned()
    });
    assert_eq!(failed["last"]["signal"], libc::SIGKILL, "{failed}");

    signal(&agent.child, libc::SIGTERM);
    kill_group(with_agent);
    assert_eq!(agent.wait_exit(LONG), Some(0), "{}", agent.log());
    let waiting = tasks(&m, app, "waiting");
    assert_eq!(waiting.len(), 1, "handed back: {waiting:?}");
    assert_eq!(waiting[0]["task"]["index"], 1, "{waiting:?}");
    assert_eq!(waiting[0]["lost_attempts"], 1, "{waiting:?}");
    assert_eq!(tasks(&m, app, "failed").len(), 1);
}

#[test]
fn agents_drain_before_their_walltime_ends() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let end = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 2;
    let mut agent = m.agent(
        "local",
        1,
        &[
            "--walltime-end",
            &end.to_string(),
            "--drain-margin-secs",
            "1",
        ],
    );
    assert_eq!(agent.wait_exit(LONG), Some(0), "{}", agent.log());
    assert!(agent.log().contains("walltime"), "{}", agent.log());
}

/// `--cpus` (or `HETPILOT_CPUS`) pins the tasks too: they are started by the spawn helper,
/// which must be forked after the agent pinned itself.
#[test]
fn tasks_of_a_pinned_agent_run_on_its_cpus_only() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _a = m.agent("local", 1, &["--cpus", "0"]);
    let app = m.submit(array_app(
        "where",
        "sh -c 'grep Cpus_allowed_list /proc/self/status'",
        1,
    ));
    m.wait_finished(app, LONG);
    let (s, detail) = m.http().get(&format!("/v1/tasks/{app}.0"), &m.admin);
    assert_eq!(s, 200, "{detail}");
    let out = std::fs::read_to_string(detail["last"]["stdout_path"].as_str().unwrap()).unwrap();
    assert_eq!(out.split_whitespace().last(), Some("0"), "{out}");
}
