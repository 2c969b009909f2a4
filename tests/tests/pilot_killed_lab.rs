//! A pilot killed from outside (`scancel` of its running Slurm job) on the real local lab
//! (`deploy/lab/start.sh`): the provisioner records it as failed with Slurm's reason,
//! logs a WARN naming the pilot, its job and its agent, hands its agent's tasks back at
//! once (long before the lease timeout), and the lost attempts do not use up the tasks'
//! `max_attempts`: with `max_attempts = 1` every task still completes, and each shows its
//! attempt lost to the infrastructure.

use hetpilot_e2e::lab::{self, configure, wait_pilot};
use hetpilot_e2e::{array_app, wait_until};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The lease timeout the manager runs with: far longer than the hand-back this test
/// expects, so a hand-back by timeout cannot pass for one by the provisioner.
const LEASE_TIMEOUT_SECS: f64 = 120.0;

fn tasks(m: &hetpilot_e2e::Manager, app: u64) -> Vec<Value> {
    let (status, body) = m.http().get(&format!("/v1/apps/{app}/tasks"), &m.admin);
    assert_eq!(status, 200, "{body}");
    body.as_array().cloned().unwrap_or_default()
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_pilot_cancelled_with_scancel_fails_with_slurms_reason_and_hands_its_tasks_back_at_once() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let debug = lab::shipped_profile("lab-debug");
    let env = configure(
        dir.path(),
        &[("lab-debug", &debug)],
        "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 1\nbackoff_max_secs = 2",
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let m = hetpilot_e2e::Manager::start_with(
        dir.path(),
        hetpilot_e2e::free_port(),
        LEASE_TIMEOUT_SECS,
        &["--tls", "self-signed"],
        &env,
    );
    // Tasks that outlive the pilot's cancellation; one attempt each.
    let mut spec = array_app("killed", "sleep 20", 4);
    spec["max_attempts"] = 1.into();
    let app = m.submit(spec);
    let running = wait_pilot(&m, "a registered pilot", Duration::from_secs(90), |p| {
        p["state"] == "running"
    });
    let (name, job) = (
        running["name"].as_str().unwrap().to_string(),
        running["batch_job_id"].as_str().unwrap().to_string(),
    );
    let agent = running["agent"].as_u64().unwrap();
    wait_until("its agent to run tasks", Duration::from_secs(60), || {
        tasks(&m, app)
            .iter()
            .any(|t| t["state"] == "running")
            .then_some(())
    });

    let out = std::process::Command::new("scancel")
        .arg(&job)
        .env("SLURM_CONF", lab::slurm_conf())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let cancelled = Instant::now();

    // Its tasks are handed back within seconds, not after the lease timeout.
    wait_until(
        "the killed agent's tasks to be handed back",
        Duration::from_secs(15),
        || {
            let listed = tasks(&m, app);
            let failed: Vec<&Value> = listed.iter().filter(|t| t["state"] == "failed").collect();
            assert!(failed.is_empty(), "no attempt counted: {failed:?}");
            listed
                .iter()
                .all(|t| t["last"]["agent"] != agent || t["state"] == "waiting")
                .then_some(())
        },
    );
    let handed_back = cancelled.elapsed();
    assert!(handed_back < Duration::from_secs(15), "{handed_back:?}");

    let failed = wait_pilot(
        &m,
        "the killed pilot's record",
        Duration::from_secs(30),
        |p| p["name"] == name && p["state"].as_str().is_some_and(|s| s != "running"),
    );
    assert_eq!(failed["state"], "failed", "{failed}");
    let reason = failed["reason"].as_str().unwrap();
    assert!(reason.contains("CANCELLED"), "Slurm's reason: {failed}");

    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    let warned = log.lines().any(|l| {
        l.contains(" WARN ")
            && l.contains(&name)
            && l.contains(&format!("job={job}"))
            && l.contains(&format!("agent={agent}"))
    });
    assert!(
        warned,
        "a WARN naming {name}, job {job} and agent {agent}:\n{log}"
    );

    // With max_attempts = 1 every task still completes on a new pilot: the killed
    // attempts were not counted against it, but apart.
    let summary = m.wait_finished(app, Duration::from_secs(240));
    assert_eq!(summary["counts"]["done"], 4, "{summary}");
    let listed = tasks(&m, app);
    let lost: u64 = listed
        .iter()
        .map(|t| t["lost_attempts"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        lost >= 1,
        "the killed attempts are counted apart: {listed:?}"
    );
    let (_, app_state) = m.http().get(&format!("/v1/apps/{app}"), &m.admin);
    assert_eq!(app_state["counts"]["failed"], 0, "{app_state}");
}
