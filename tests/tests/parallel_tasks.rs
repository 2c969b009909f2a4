//! Parallel tasks (`procs` / `nodes`) over several local agents: one run started on its
//! head with a host file, the other members' slots held while it runs, the run retried
//! whole when a member is SIGKILLed, and sizes no platform can hold refused.

use hetpilot_e2e::{wait_until, Agent, Manager};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

/// The task: checks its host file and variables (exits 3 when they are wrong), leaves
/// its pid and host list in `dir`, then runs until `dir/release.ATTEMPT` exists.
fn script(dir: &Path) -> String {
    let d = dir.display();
    let path = dir.join("parallel.sh");
    std::fs::write(
        &path,
        format!(
            r#"#!/bin/sh
D={d}
[ "$HETPILOT_PROCS" = 4 ] || exit 3
[ "$(wc -l < "$HETPILOT_NODEFILE")" -eq 2 ] || exit 3
grep -Eq '^node[A-C] slots=2$' "$HETPILOT_NODEFILE" || exit 3
[ "$(grep -Ec '^node[A-C] slots=2$' "$HETPILOT_NODEFILE")" -eq 2 ] || exit 3
hosts=$(cut -d' ' -f1 "$HETPILOT_NODEFILE" | paste -sd, -)
[ "$HETPILOT_HOSTS" = "$hosts" ] || exit 3
echo $$ > "$D/pid.$HETPILOT_ATTEMPT"
printf '%s\n' "$HETPILOT_NODEFILE" $HETPILOT_LAUNCH > "$D/launch.$HETPILOT_ATTEMPT"
echo "$HETPILOT_HOSTS" > "$D/hosts.$HETPILOT_ATTEMPT.tmp"
mv "$D/hosts.$HETPILOT_ATTEMPT.tmp" "$D/hosts.$HETPILOT_ATTEMPT"
while [ ! -e "$D/release.$HETPILOT_ATTEMPT" ]; do sleep 0.05; done
"#
        ),
    )
    .unwrap();
    format!("sh {}", path.display())
}

fn agents(m: &Manager) -> Vec<Value> {
    let (status, body) = m.http().get("/v1/agents", &m.admin);
    assert_eq!(status, 200, "{body}");
    body.as_array().unwrap().clone()
}

fn wait_active(m: &Manager, n: usize) {
    wait_until(&format!("{n} agents to register"), LONG, || {
        let active = agents(m).iter().filter(|a| a["state"] == "active").count();
        (active == n).then_some(())
    });
}

/// The hosts the run of `attempt` got, once it runs.
fn running_hosts(dir: &Path, attempt: u32) -> Vec<String> {
    let file = dir.join(format!("hosts.{attempt}"));
    let hosts = wait_until(&format!("attempt {attempt} to run"), LONG, || {
        std::fs::read_to_string(&file).ok()
    });
    hosts.trim().split(',').map(str::to_string).collect()
}

fn count(m: &Manager, sql: &str, params: impl rusqlite::Params) -> i64 {
    m.db().query_row(sql, params, |r| r.get(0)).unwrap()
}

fn submit_parallel(m: &Manager, dir: &Path) -> u64 {
    m.submit(json!({
        "name": "mpi", "command": script(dir), "procs": 4, "max_attempts": 1,
        "tasks": {"array": {"start": 0, "end": 0}},
    }))
}

/// Every active agent has all its slots free and keeps none for a parallel run.
fn assert_no_slot_held(m: &Manager) {
    // The store and the queues agree once the last report is in.
    wait_until("every slot to be free", LONG, || {
        agents(m)
            .iter()
            .filter(|a| a["state"] == "active")
            .all(|a| a["free_slots"] == a["slots"] && a["member_of"].is_null())
            .then_some(())
    });
}

#[test]
fn a_procs_task_runs_once_on_its_head_with_a_host_file_and_holds_both_agents() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _a = m.agent_on_node("local", 2, "nodeA");
    let _b = m.agent_on_node("local", 2, "nodeB");
    wait_active(&m, 2);
    let app = submit_parallel(&m, dir.path());
    let mut hosts = running_hosts(dir.path(), 1);
    hosts.sort();
    assert_eq!(hosts, ["nodeA", "nodeB"]);
    // Its launcher (the default of a platform without a profile), split as a shell does.
    let launch = std::fs::read_to_string(dir.path().join("launch.1")).unwrap();
    let words: Vec<&str> = launch.lines().collect();
    assert_eq!(
        words[1..],
        ["mpiexec", "-hostfile", words[0], "-n", "4"],
        "HETPILOT_LAUNCH: {launch}"
    );
    // While it runs, both agents' slots are taken: the head's by the run, the other's
    // kept for it.
    let view = agents(&m);
    for a in &view {
        assert_eq!(a["free_slots"], 0, "{a}");
    }
    let members: Vec<&Value> = view.iter().filter(|a| !a["member_of"].is_null()).collect();
    assert_eq!(members.len(), 1, "{view:?}");
    assert_eq!(
        members[0]["member_of"][0],
        json!({"app": app, "index": 0}),
        "{view:?}"
    );
    // The head lists the group lease: itself first, then the member, 2 slots on each.
    let heads: Vec<&Value> = view
        .iter()
        .filter(|a| !a["group_leases"].is_null())
        .collect();
    assert_eq!(heads.len(), 1, "{view:?}");
    let group = &heads[0]["group_leases"][0];
    assert_eq!(group["task"], json!({"app": app, "index": 0}), "{group}");
    assert_eq!(group["attempt"], 1, "{group}");
    let agents_of: Vec<(Value, u64)> = group["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["agent"].clone(), m["slots"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        agents_of,
        [
            (heads[0]["agent"].clone(), 2),
            (members[0]["agent"].clone(), 2)
        ],
        "{group}"
    );
    // `/metrics` counts the member's slots kept for the run.
    let metrics = reqwest::blocking::Client::new()
        .get(format!("{}/metrics", m.url))
        .bearer_auth(&m.admin)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l == "hetpilot_agent_parallel_member_slots{platform=\"local\"} 2"),
        "{metrics}"
    );
    let stream = m.submit(json!({
        "name": "stream", "command": "true",
        "tasks": {"array": {"start": 0, "end": 7}},
    }));
    std::fs::write(dir.path().join("release.1"), "").unwrap();
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    m.wait_finished(stream, LONG);
    let ended = count(
        &m,
        "SELECT ended_ms FROM attempts WHERE app_id = ?1 AND attempt = 1",
        [app as i64],
    );
    let before = count(
        &m,
        "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND leased_ms < ?2",
        [stream as i64, ended],
    );
    assert_eq!(before, 0, "1-core tasks took slots the parallel run held");
    // Started once: one attempt, on the head, and its record names both hosts.
    let runs = count(
        &m,
        "SELECT COUNT(*) FROM attempts WHERE app_id = ?1",
        [app as i64],
    );
    assert_eq!(runs, 1);
    let out = m.cli(&["tasks", &app.to_string()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains("nodeA") && text.contains("nodeB"),
        "tasks shows the hosts: {text}"
    );
    let out = m.cli(&["logs", &format!("{app}.0")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("nodeA") && text.contains("nodeB"),
        "logs shows the hosts: {text}"
    );
    assert_no_slot_held(&m);
}

#[test]
fn a_member_killed_mid_run_sends_the_task_back_whole_and_leaves_no_slot_held() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 2.0);
    let mut nodes: Vec<(&str, Agent)> = ["nodeA", "nodeB", "nodeC"]
        .into_iter()
        .map(|n| (n, m.agent_on_node("local", 2, n)))
        .collect();
    wait_active(&m, 3);
    let app = m.submit(json!({
        "name": "mpi", "command": script(dir.path()), "procs": 4,
        "tasks": {"array": {"start": 0, "end": 0}},
    }));
    let first = running_hosts(dir.path(), 1);
    let pid: i32 = std::fs::read_to_string(dir.path().join("pid.1"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The member is the host that is not the head (the first in the host file).
    let member = first[1].clone();
    let k = nodes.iter().position(|(n, _)| *n == member).unwrap();
    let (_, mut agent) = nodes.remove(k);
    agent.child.kill().unwrap();
    agent.child.wait().unwrap();
    // Retried whole on the two agents left; the first run is killed on its head.
    let mut second = running_hosts(dir.path(), 2);
    second.sort();
    let mut left: Vec<String> = nodes.iter().map(|(n, _)| n.to_string()).collect();
    left.sort();
    assert_eq!(second, left);
    wait_until("the first run to be killed", LONG, || {
        // SAFETY: signal 0 only checks that the process exists.
        (unsafe { libc::kill(pid, 0) } != 0).then_some(())
    });
    std::fs::write(dir.path().join("release.2"), "").unwrap();
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    let lost = count(
        &m,
        "SELECT lost_attempts FROM tasks WHERE app_id = ?1",
        [app as i64],
    );
    assert_eq!(lost, 1, "the first attempt was lost with its member");
    assert_no_slot_held(&m);
}

#[test]
fn parallel_sizes_out_of_range_or_too_wide_get_a_400_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _a = m.agent_on_node("local", 2, "nodeA");
    let _b = m.agent_on_node("local", 2, "nodeB");
    wait_active(&m, 2);
    let base = json!({"name": "p", "command": "true", "tasks": {"array": {"start": 0, "end": 0}}});
    let with = |extra: Value| {
        let mut spec = base.clone();
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        m.http().post("/v1/apps", &m.admin, &spec)
    };
    for (extra, field) in [
        (json!({"procs": 0}), "procs"),
        (json!({"nodes": 0}), "nodes"),
        (json!({"procs": 1u64 << 40}), "procs"),
        (json!({"nodes": 1u64 << 40}), "nodes"),
        (json!({"nodes": 3, "procs": 4}), "procs"),
        (json!({"nodes": 2, "gpus": 1}), "gpus"),
        (json!({"procs": 4, "cores": 2}), "cores"),
        // More than the platform's agents hold at once (no profile says it grows).
        (json!({"procs": 4096}), "procs"),
        (json!({"nodes": 3}), "nodes"),
    ] {
        let (status, body) = with(extra.clone());
        assert_eq!(status, 400, "{extra}: {body}");
        let text = body.to_string();
        assert!(
            text.contains(&format!("field `{field}`")),
            "{extra}: {text}"
        );
    }
    assert_eq!(with(json!({"procs": 4})).0, 200);
    let out = m.cli(&["submit", "--procs", "0", "--array", "0-0", "--", "true"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("procs"), "{err}");
}

#[test]
fn a_manager_killed_mid_run_restarts_with_the_group_whole() {
    let dir = tempfile::tempdir().unwrap();
    let port = hetpilot_e2e::free_port();
    let mut m = Manager::start_on(dir.path(), port, 30.0, &[]);
    let _a = m.agent_on_node("local", 2, "nodeA");
    let _b = m.agent_on_node("local", 2, "nodeB");
    wait_active(&m, 2);
    let app = submit_parallel(&m, dir.path());
    running_hosts(dir.path(), 1);
    m.kill();
    let m = Manager::start_on(dir.path(), port, 30.0, &[]);
    // Restored whole: the head's run and the member's kept slots.
    let view = agents(&m);
    assert!(view.iter().all(|a| a["free_slots"] == 0), "{view:?}");
    let members = view.iter().filter(|a| !a["member_of"].is_null()).count();
    assert_eq!(members, 1, "{view:?}");
    std::fs::write(dir.path().join("release.1"), "").unwrap();
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    let runs = count(
        &m,
        "SELECT COUNT(*) FROM attempts WHERE app_id = ?1",
        [app as i64],
    );
    assert_eq!(runs, 1, "the run went on through the restart");
    assert_no_slot_held(&m);
}
