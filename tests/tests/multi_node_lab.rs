//! A multi-node pilot on the real local lab (`deploy/lab/start.sh`): a 2-node pilot on
//! Slurm partition `small` (nodes n2 and n3) starts one agent per node with `srun`; both
//! register with the pilot's one credential under their own node names, both run tasks,
//! the pilot's views show the group, and when its job is cancelled both agents are
//! released together, their tasks handed back at once.

use hetpilot_e2e::lab::{self, configure, wait_pilot};
use hetpilot_e2e::{array_app, wait_until};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

fn get(m: &hetpilot_e2e::Manager, path: &str) -> Vec<Value> {
    let (status, body) = m.http().get(path, &m.admin);
    assert_eq!(status, 200, "{body}");
    body.as_array().cloned().unwrap_or_default()
}

/// A pilot's group: the node names its agents registered under, and their ids.
fn members(pilot: &Value) -> (BTreeSet<String>, BTreeSet<u64>) {
    let members = pilot["members"].as_array().cloned().unwrap_or_default();
    let hosts = members
        .iter()
        .map(|g| g["hostname"].as_str().unwrap().to_string())
        .collect();
    let agents = members
        .iter()
        .map(|g| g["agent"].as_u64().unwrap())
        .collect();
    (hosts, agents)
}

/// A manager with `platform`'s `profile` whose application of 8 `sleep 30` tasks gets a
/// 2-node pilot: the manager, the application, the pilot once both agents registered
/// (under `hosts`), and their ids, with tasks running on both.
fn two_node_pilot(
    dir: &std::path::Path,
    platform: &str,
    profile: &std::path::Path,
    provision: &str,
    hosts: [&str; 2],
) -> (hetpilot_e2e::Manager, u64, Value, BTreeSet<u64>) {
    let env = configure(dir, &[(platform, profile)], provision);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let m = hetpilot_e2e::Manager::start_with(dir, hetpilot_e2e::free_port(), 120.0, &[], &env);
    let app = m.submit(array_app("two-nodes", "sleep 30", 8));
    let pilot = wait_pilot(
        &m,
        "a pilot with an agent on each node",
        Duration::from_secs(120),
        |p| p["members"].as_array().is_some_and(|g| g.len() == 2),
    );
    assert_eq!(pilot["nodes"], 2, "{pilot}");
    let (registered, agents) = members(&pilot);
    let want: BTreeSet<String> = hosts.iter().map(|h| h.to_string()).collect();
    assert_eq!(registered, want, "one agent per node: {pilot}");
    // Both run tasks: 2 slots each, 4 of the 8 tasks at once.
    wait_running_on_all(&m, app, &agents);
    (m, app, pilot, agents)
}

/// Waits until tasks of `app` run on every one of `agents` at once.
fn wait_running_on_all(m: &hetpilot_e2e::Manager, app: u64, agents: &BTreeSet<u64>) {
    wait_until(
        "tasks running on every agent of the group",
        Duration::from_secs(60),
        || {
            let running: BTreeSet<u64> = get(m, &format!("/v1/apps/{app}/tasks"))
                .iter()
                .filter(|t| t["state"] == "running")
                .filter_map(|t| t["last"]["agent"].as_u64())
                .collect();
            (running == *agents).then_some(())
        },
    );
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_two_node_slurm_pilot_runs_an_agent_per_node_and_releases_both_when_cancelled() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let shipped = std::fs::read_to_string(lab::shipped_profile("lab-small")).unwrap();
    let profile = dir.path().join("lab-small.toml");
    std::fs::write(
        &profile,
        shipped
            .replace("max_running = 2", "max_running = 1\nnodes_per_pilot = 2")
            .replace("max_queued = 2", "max_queued = 1"),
    )
    .unwrap();
    let (m, app, pilot, agents) = two_node_pilot(
        dir.path(),
        "lab-small",
        &profile,
        "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 1\nbackoff_max_secs = 2",
        ["n2", "n3"],
    );
    let listed = get(&m, "/v1/agents");
    for a in listed
        .iter()
        .filter(|a| agents.contains(&a["agent"].as_u64().unwrap()))
    {
        assert_eq!(a["pilot"], pilot["name"], "{a}");
    }
    let out = m.cli(&["pilots"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2/2"), "{text}");

    let job = pilot["batch_job_id"].as_str().unwrap();
    let out = std::process::Command::new("scancel")
        .arg(job)
        .env("SLURM_CONF", lab::slurm_conf())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // Both agents are released together and their tasks handed back, long before the
    // 120 s lease timeout.
    wait_until("both agents released", Duration::from_secs(20), || {
        let states: Vec<String> = get(&m, "/v1/agents")
            .iter()
            .filter(|a| agents.contains(&a["agent"].as_u64().unwrap()))
            .map(|a| a["state"].as_str().unwrap().to_string())
            .collect();
        let tasks = get(&m, &format!("/v1/apps/{app}/tasks"));
        let held = tasks.iter().any(|t| {
            t["state"] == "running" && agents.contains(&t["last"]["agent"].as_u64().unwrap_or(0))
        });
        (states.len() == 2 && states.iter().all(|s| s != "active" && s != "draining") && !held)
            .then_some(())
    });
    let ended = wait_pilot(&m, "the cancelled pilot", Duration::from_secs(30), |p| {
        p["name"] == pilot["name"] && p["state"] != "running"
    });
    assert_eq!(ended["state"], "failed", "{ended}");
    assert!(
        ended["reason"].as_str().unwrap().contains("CANCELLED"),
        "{ended}"
    );
}

/// Whether process `pid` (on this machine) is gone or a zombie.
fn gone(pid: &str) -> bool {
    pid.parse::<u32>()
        .map_or(true, hetpilot_e2e::proc_stats::is_dead)
}

/// A 2-node pilot of the ssh adapter: one agent on each of two hosts (the lab's sshd
/// reached as `localhost` and as `127.0.0.1`, one machine under two names), each
/// registered under the host it was started on, both running tasks; a manager that shuts
/// down stops both.
#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_two_host_ssh_pilot_runs_an_agent_on_each_host_and_stops_both() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let shipped = std::fs::read_to_string(lab::shipped_profile("lab-ssh")).unwrap();
    let profile = dir.path().join("lab-ssh.toml");
    std::fs::write(
        &profile,
        shipped
            .replace(
                "hosts = [\"localhost\"]",
                "hosts = [\"localhost\", \"127.0.0.1\"]",
            )
            .replace("nodes = 1", "nodes = 2\nnodes_per_pilot = 2"),
    )
    .unwrap();
    let (mut m, _app, pilot, _agents) = two_node_pilot(
        dir.path(),
        "lab-ssh",
        &profile,
        "interval_secs = 0.5\nbackoff_base_secs = 1\nbackoff_max_secs = 2",
        ["127.0.0.1", "localhost"],
    );
    // One process per host in the job id: `localhost:PID@START+127.0.0.1:PID@START`.
    let job = pilot["batch_job_id"].as_str().unwrap().to_string();
    let pids: Vec<String> = job
        .split('+')
        .map(|part| {
            let (_, rest) = part.split_once(':').unwrap();
            rest.split('@').next().unwrap().to_string()
        })
        .collect();
    assert_eq!(pids.len(), 2, "{job}");
    assert!(pids.iter().all(|p| !gone(p)), "{job}");
    // A clean shutdown cancels the pilot: both hosts' agents are stopped.
    hetpilot_e2e::signal(&m.child, libc::SIGTERM);
    let _ = m.child.wait();
    wait_until("both agents stopped", Duration::from_secs(30), || {
        pids.iter().all(|p| gone(p)).then_some(())
    });
}
