//! A workflow with a parallel task (`procs` on one `[[task]]`) between serial ones, over
//! local agents registered as nodeA and nodeB: it runs end to end in dependency order,
//! the parallel task once, on a group of both agents with its host file and launcher;
//! hostile sizes on a workflow's task get a 400 naming the field.

use hetpilot_e2e::{wait_until, Manager};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

fn wait_active(m: &Manager, n: usize) {
    wait_until(&format!("{n} agents to register"), LONG, || {
        let (status, body) = m.http().get("/v1/agents", &m.admin);
        assert_eq!(status, 200, "{body}");
        let active = body
            .as_array()?
            .iter()
            .filter(|a| a["state"] == "active")
            .count();
        (active == n).then_some(())
    });
}

/// `prep` → `sim` (`procs = 4`, checks it ran after `prep` and has its host file) →
/// `post` (checks `sim` wrote its report).
fn pipeline(dir: &Path) -> std::path::PathBuf {
    let d = dir.display();
    std::fs::write(
        dir.join("sim.sh"),
        format!(
            r#"#!/bin/sh
[ -e {d}/prep.done ] || exit 3
[ "$HETPILOT_PROCS" = 4 ] || exit 3
[ "$(wc -l < "$HETPILOT_NODEFILE")" -eq 2 ] || exit 3
echo "$HETPILOT_HOSTS" > {d}/sim.hosts
printf '%s\n' $HETPILOT_LAUNCH > {d}/sim.launch
"#
        ),
    )
    .unwrap();
    let file = dir.join("pipeline.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"pipeline\"\nmax_attempts = 1\n\
             [[task]]\nid = \"prep\"\ncommand = \"touch {d}/prep.done\"\n\
             [[task]]\nid = \"sim\"\ncommand = \"sh {d}/sim.sh\"\nafter = [\"prep\"]\nprocs = 4\n\
             [[task]]\nid = \"post\"\ncommand = \"test -s {d}/sim.hosts\"\nafter = [\"sim\"]\n"
        ),
    )
    .unwrap();
    file
}

#[test]
fn a_workflow_runs_a_parallel_task_between_serial_ones_on_a_group_of_agents() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _a = m.agent_on_node("local", 2, "nodeA");
    let _b = m.agent_on_node("local", 2, "nodeB");
    wait_active(&m, 2);
    let out = m.cli(&["submit", pipeline(dir.path()).to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{out:?}");
    let app = serde_json::from_slice::<Value>(&out.stdout).unwrap()["app"]
        .as_u64()
        .unwrap();
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], 3, "{summary}");
    // `sim` ran once, on both agents, with the default launcher over its host file.
    let mut hosts: Vec<String> = std::fs::read_to_string(dir.path().join("sim.hosts"))
        .unwrap()
        .trim()
        .split(',')
        .map(str::to_string)
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["nodeA", "nodeB"]);
    let launch = std::fs::read_to_string(dir.path().join("sim.launch")).unwrap();
    let words: Vec<&str> = launch.lines().collect();
    assert_eq!(
        (words.first(), words.get(3), words.get(4)),
        (Some(&"mpiexec"), Some(&"-n"), Some(&"4")),
        "{launch}"
    );
    // In dependency order, each task once: the stored attempts, by task.
    let db = m.db();
    let mut stmt = db
        .prepare(
            "SELECT idx, leased_ms, ended_ms, hosts FROM attempts \
             WHERE app_id = ?1 ORDER BY idx",
        )
        .unwrap();
    let rows: Vec<(i64, i64, i64, Option<String>)> = stmt
        .query_map([app as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        [0, 1, 2],
        "{rows:?}"
    );
    assert!(rows[0].2 <= rows[1].1 && rows[1].2 <= rows[2].1, "{rows:?}");
    let group = rows[1].3.as_deref().unwrap_or_default();
    assert!(
        group.contains("nodeA") && group.contains("nodeB"),
        "sim's attempt records both hosts: {rows:?}"
    );
    assert!(rows[0].3.is_none() && rows[2].3.is_none(), "{rows:?}");
}

#[test]
fn a_workflow_tasks_hostile_parallel_sizes_get_a_400_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _a = m.agent_on_node("local", 2, "nodeA");
    let _b = m.agent_on_node("local", 2, "nodeB");
    wait_active(&m, 2);
    let with = |sim: Value| {
        let spec = json!({"name": "wf", "command": "true",
            "tasks": {"lines": ["prep", "sim"]},
            "dag": {"tasks": [{}, sim]}});
        m.http().post("/v1/apps", &m.admin, &spec)
    };
    for (sim, field) in [
        (json!({"parents": [0], "procs": 0}), "procs"),
        (json!({"parents": [0], "procs": 1u64 << 40}), "procs"),
        (json!({"parents": [0], "nodes": 1u64 << 40}), "nodes"),
        (json!({"parents": [0], "nodes": 3, "procs": 4}), "procs"),
        (json!({"parents": [0], "procs": 4, "cores": 2}), "cores"),
        (json!({"parents": [0], "nodes": 2, "gpus": 1}), "gpus"),
        // More than the platform's agents hold at once.
        (json!({"parents": [0], "procs": 64}), "procs"),
        (json!({"parents": [0], "nodes": 3}), "nodes"),
    ] {
        let (status, body) = with(sim.clone());
        assert_eq!(status, 400, "{sim}: {body}");
        let text = body.to_string();
        assert!(
            text.contains(&format!("field `{field}`")) && text.contains("task `sim`"),
            "{sim}: {text}"
        );
    }
    assert_eq!(with(json!({"parents": [0], "procs": 4})).0, 200);
}
