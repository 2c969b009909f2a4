//! A manager stopped cleanly (SIGTERM) cancels the pilots it submitted, so none holds its
//! allocation waiting for a manager that is gone; with `cancel_on_shutdown = false` it
//! leaves them for a restart. Pilots here use the `local` adapter (forked on this machine
//! in their own session, as the ssh adapter does on a remote host).

use hetpilot_e2e::lab::{configure, local_profile, pilots, wait_pilot};
use hetpilot_e2e::proc_stats::is_dead;
use hetpilot_e2e::{array_app, free_port, signal, wait_until, Manager};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// A manager on `port` with platform `here` (1-core local pilots, up to 2 running).
fn start(dir: &Path, port: u16, cancel_on_shutdown: bool) -> Manager {
    let profile = local_profile(dir, "here", 1, "max_queued = 1\nmax_running = 2");
    let env = configure(
        dir,
        &[("here", &profile)],
        &format!(
            "interval_secs = 0.3\nbackoff_base_secs = 1\ncancel_on_shutdown = {cancel_on_shutdown}"
        ),
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Manager::start_on(dir, port, 10.0, &env)
}

/// The agent's pid in a local pilot's job id (`localhost:PID@START`).
fn agent_pid(pilot: &Value) -> u32 {
    let id = pilot["batch_job_id"].as_str().expect("a job id");
    let pid = id.split_once(':').unwrap().1.split('@').next().unwrap();
    pid.parse().unwrap()
}

/// Starts a manager whose running pilot holds a task; returns it and that pilot.
fn with_a_running_pilot(dir: &Path, port: u16, cancel_on_shutdown: bool) -> (Manager, Value) {
    let m = start(dir, port, cancel_on_shutdown);
    m.submit(array_app("held", "sleep 600", 1));
    // An agent may register before the provisioner has recorded its job id: wait for both.
    let pilot = wait_pilot(&m, "a registered pilot", Duration::from_secs(60), |p| {
        p["state"] == "running" && p["batch_job_id"].is_string()
    });
    assert!(!is_dead(agent_pid(&pilot)), "{pilot}");
    // Whichever came first, the running pilot is not said to wait in the batch queue.
    assert_eq!(pilot["reason"], "", "{pilot}");
    (m, pilot)
}

/// SIGTERM to the manager; waits for it to exit successfully.
fn stop_cleanly(m: &mut Manager) {
    signal(&m.child, libc::SIGTERM);
    let status = wait_until("the manager to exit", Duration::from_secs(60), || {
        m.child.try_wait().unwrap()
    });
    assert!(status.success(), "{status:?}");
}

/// Asserts that `pilot` is recorded cancelled because the manager shut down.
fn assert_cancelled_at_shutdown(m: &Manager, pilot: &Value) {
    let (state, reason): (String, String) = m
        .db()
        .query_row(
            "SELECT state, reason FROM pilots WHERE name = ?1",
            [pilot["name"].as_str().unwrap()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (state.as_str(), reason.as_str()),
        ("cancelled", "the manager shut down")
    );
}

#[test]
fn a_manager_stopped_cleanly_cancels_its_pilots() {
    let dir = tempfile::tempdir().unwrap();
    let (mut m, pilot) = with_a_running_pilot(dir.path(), free_port(), true);
    stop_cleanly(&mut m);
    // The manager waited for the cancel: the agent is gone when it has exited.
    let pid = agent_pid(&pilot);
    assert!(is_dead(pid), "agent {pid} outlived its manager");
    assert_cancelled_at_shutdown(&m, &pilot);
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    assert!(log.contains("pilot cancelled"), "{log}");
}

#[test]
fn with_cancel_on_shutdown_off_pilots_wait_for_the_restarted_manager() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut m, pilot) = with_a_running_pilot(dir.path(), port, false);
    stop_cleanly(&mut m);
    let pid = agent_pid(&pilot);
    assert!(!is_dead(pid), "the pilot was kept");
    let restarted = start(dir.path(), port, false);
    let again = pilots(&restarted)
        .into_iter()
        .find(|p| p["name"] == pilot["name"])
        .expect("the pilot was recovered");
    assert_eq!(again["state"], "running", "{again}");
    // Its agent is heard by the restarted manager (every agent's last_seen starts at the
    // restart; a later one is the agent's own).
    let agent = pilot["agent"].as_u64().unwrap();
    let restarted_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    wait_until(
        "the kept agent to reach the restarted manager",
        Duration::from_secs(60),
        || {
            let (_, agents) = restarted.http().get("/v1/agents", &restarted.admin);
            let a = agents.as_array()?.iter().find(|a| a["agent"] == agent)?;
            (a["state"] == "active" && a["last_seen_ms"].as_u64()? > restarted_ms + 500)
                .then_some(())
        },
    );
    // Dropping the managers (SIGKILL, no clean shutdown) leaves the pilot to the harness,
    // which stops every pilot recorded in the data directory.
    drop(restarted);
    drop(m);
    assert!(is_dead(pid), "the harness stopped the pilot");
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_manager_stopped_cleanly_cancels_its_slurm_pilots() {
    use hetpilot_e2e::lab;
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let debug = lab::shipped_profile("lab-debug");
    let env = configure(
        dir.path(),
        &[("lab-debug", &debug)],
        "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 2",
    );
    let mut m = lab::start_manager(dir.path(), &env);
    m.submit(array_app("held", "sleep 600", 1));
    let pilot = wait_pilot(&m, "a registered pilot", Duration::from_secs(120), |p| {
        p["state"] == "running" && p["batch_job_id"].is_string()
    });
    let job = pilot["batch_job_id"].as_str().unwrap().to_string();
    let squeue = || {
        let out = std::process::Command::new("squeue")
            .args(["-h", "-o", "%T", "-j", &job])
            .env("SLURM_CONF", lab::slurm_conf())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(squeue(), "RUNNING");
    stop_cleanly(&mut m);
    // scancel was run before the manager exited: Slurm ends the job (and its agent).
    wait_until("Slurm to end the job", Duration::from_secs(60), || {
        squeue().is_empty().then_some(())
    });
    assert_cancelled_at_shutdown(&m, &pilot);
}
