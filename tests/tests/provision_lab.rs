//! Provisioning against the real local lab (`deploy/lab/start.sh`): pilots submitted
//! through Slurm on two partitions run an application to completion and end; a login host
//! that refuses connections marks only its platform unavailable; a missing agent binary
//! fails its pilot fast with a clear reason; a partition typo makes its platform
//! unavailable with sbatch's reason, which the application's `blocked` reason and the
//! manager's log repeat. The manager serves HTTPS with a self-signed certificate whose
//! fingerprint the pilots' job scripts hand to their agents.

use hetpilot_e2e::lab::{self, configure, pilots, platform_status, start_tls_manager, wait_pilot};
use hetpilot_e2e::{array_app, wait_until};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const FAST: &str = "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 2\nbackoff_max_secs = 30";

fn platforms_of(m: &hetpilot_e2e::Manager, state: &str) -> BTreeSet<String> {
    pilots(m)
        .iter()
        .filter(|p| p["state"] == state || (state == "registered" && !p["registered_ms"].is_null()))
        .map(|p| p["platform"].as_str().unwrap().to_string())
        .collect()
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn slurm_pilots_on_two_partitions_run_an_application_to_completion_and_end() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let (debug, small) = (
        lab::shipped_profile("lab-debug"),
        lab::shipped_profile("lab-small"),
    );
    let env = configure(
        dir.path(),
        &[("lab-debug", &debug), ("lab-small", &small)],
        FAST,
    );
    let m = start_tls_manager(dir.path(), &env);
    // 60 one-second tasks: long enough for pilots on both partitions to join.
    let app = m.submit(array_app("lab-e2e", "sleep 1", 60));
    let both: BTreeSet<String> = ["lab-debug", "lab-small"].map(String::from).into();
    wait_until(
        "agents registered on both partitions",
        Duration::from_secs(120),
        || (platforms_of(&m, "registered") == both).then_some(()),
    );
    let summary = m.wait_finished(app, Duration::from_secs(300));
    assert_eq!(summary["counts"]["done"], 60, "{summary}");
    let (_, report) = m.http().get(&format!("/v1/apps/{app}/report"), &m.admin);
    let served: BTreeSet<String> = report["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["platform"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(served, both, "tasks ran on both partitions: {report}");
    // No work left: idle agents drain, their batch jobs end, queued pilots are cancelled.
    let all = wait_until("every pilot to end", Duration::from_secs(120), || {
        let ps = pilots(&m);
        ps.iter()
            .all(|p| ["ended", "cancelled"].contains(&p["state"].as_str().unwrap()))
            .then_some(ps)
    });
    let ended: Vec<_> = all.iter().filter(|p| p["state"] == "ended").collect();
    assert!(ended.len() >= 2, "{all:?}");
    for p in &ended {
        assert!(p["batch_job_id"].is_string() && p["agent"].is_u64(), "{p}");
        assert!(!p["reason"].as_str().unwrap().is_empty(), "{p}");
    }
    // The CLI shows them.
    let out = m.cli(&["pilots", "--all"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains("lab-small-p") && text.contains("ended"),
        "{text}"
    );
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_login_host_refusing_connections_marks_only_its_platform_unavailable() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let refused = dir.path().join("lab-refused.toml");
    let text = std::fs::read_to_string(lab::shipped_profile("lab-ssh-slurm"))
        .unwrap()
        .replace("lab-ssh-slurm", "lab-refused")
        .replace("127.0.0.1:2222", "127.0.0.1:1");
    std::fs::write(&refused, text).unwrap();
    let debug = lab::shipped_profile("lab-debug");
    let env = configure(
        dir.path(),
        &[("lab-refused", &refused), ("lab-debug", &debug)],
        FAST,
    );
    let m = start_tls_manager(dir.path(), &env);
    let app = m.submit(array_app("refused", "true", 10));
    let down = wait_until(
        "lab-refused to be unavailable",
        Duration::from_secs(60),
        || platform_status(&m, "lab-refused").filter(|s| s["available"] == false),
    );
    let reason = down["reason"].as_str().unwrap();
    assert!(
        reason.contains("127.0.0.1") && reason.contains("1"),
        "{down}"
    );
    assert!(down["failures"].as_u64().unwrap() >= 1, "{down}");
    // The other platform keeps working.
    let summary = m.wait_finished(app, Duration::from_secs(180));
    assert_eq!(summary["counts"]["done"], 10, "{summary}");
    let up = platform_status(&m, "lab-debug").unwrap();
    assert_eq!(up["available"], true, "{up}");
    let out = m.cli(&["platforms"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let line = text
        .lines()
        .find(|l| l.starts_with("lab-refused"))
        .unwrap_or_default();
    assert!(line.contains("unavailable"), "{text}");
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_missing_agent_binary_fails_the_pilot_fast_with_a_clear_reason() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    // A copy of the agent that passes the start-up checks, then is gone before any pilot
    // runs (as when an upgrade removes it): the job itself must find it missing.
    let agent = dir.path().join("hetpilot-agent");
    std::fs::copy(hetpilot_e2e::bin("hetpilot-agent"), &agent).unwrap();
    let broken = dir.path().join("lab-nobinary.toml");
    let text = std::fs::read_to_string(lab::shipped_profile("lab-debug"))
        .unwrap()
        .replace("lab-debug", "lab-nobinary")
        .replace("${HETPILOT_AGENT_BINARY}", &agent.display().to_string());
    std::fs::write(&broken, text).unwrap();
    let env = configure(dir.path(), &[("lab-nobinary", &broken)], FAST);
    let m = start_tls_manager(dir.path(), &env);
    let log = dir.path().join("manager.log");
    wait_until(
        "the start-up checks to pass",
        Duration::from_secs(60),
        || {
            let text = std::fs::read_to_string(&log).ok()?;
            text.lines()
                .any(|l| l.contains("platform passed its checks") && l.contains("lab-nobinary"))
                .then_some(())
        },
    );
    std::fs::remove_file(&agent).unwrap();
    let started = Instant::now();
    m.submit(array_app("nobinary", "true", 3));
    let failed = wait_pilot(&m, "the pilot to fail", Duration::from_secs(60), |p| {
        p["state"] == "failed"
    });
    let took = started.elapsed();
    let reason = failed["reason"].as_str().unwrap();
    assert!(reason.contains("agent binary is missing"), "{failed}");
    assert!(reason.contains("exit 127"), "{failed}");
    assert!(took < Duration::from_secs(30), "failed after {took:?}");
    let status = platform_status(&m, "lab-nobinary").unwrap();
    assert!(
        status["failures"].as_u64().unwrap() >= 1,
        "backing off: {status}"
    );
    assert!(
        status["reason"]
            .as_str()
            .unwrap()
            .contains("agent binary is missing"),
        "{status}"
    );
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_restarted_manager_keeps_following_its_pilots() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let debug = lab::shipped_profile("lab-debug");
    let env = configure(dir.path(), &[("lab-debug", &debug)], FAST);
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut m = start_tls_manager(dir.path(), &env);
    let port = m.port;
    let app = m.submit(array_app("restart", "sleep 1", 20));
    let running = wait_pilot(&m, "a registered pilot", Duration::from_secs(60), |p| {
        p["state"] == "running"
    });
    m.kill();
    // Restarted on the same port with the same (reused) certificate, so the running
    // pilot's pinned fingerprint still matches.
    let m = hetpilot_e2e::Manager::start_with(
        dir.path(),
        port,
        10.0,
        &["--tls", "self-signed"],
        &env_refs,
    );
    let again = pilots(&m)
        .into_iter()
        .find(|p| p["name"] == running["name"])
        .expect("the pilot was recovered");
    assert_eq!(again["batch_job_id"], running["batch_job_id"], "{again}");
    assert_eq!(again["state"], "running", "{again}");
    let summary = m.wait_finished(app, Duration::from_secs(180));
    assert_eq!(summary["counts"]["done"], 20, "{summary}");
    // The recovered pilot is followed to its end after the work is done.
    wait_pilot(
        &m,
        "the recovered pilot to end",
        Duration::from_secs(120),
        |p| p["name"] == running["name"] && p["state"] == "ended",
    );
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_job_whose_agent_never_registers_is_cancelled_with_a_reason() {
    use std::os::unix::fs::PermissionsExt;
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let silent = dir.path().join("silent-agent");
    std::fs::write(&silent, "#!/bin/sh\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&silent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let profile = dir.path().join("lab-silent.toml");
    let text = std::fs::read_to_string(lab::shipped_profile("lab-debug"))
        .unwrap()
        .replace("lab-debug", "lab-silent")
        .replace("${HETPILOT_AGENT_BINARY}", silent.to_str().unwrap());
    std::fs::write(&profile, text).unwrap();
    let env = configure(
        dir.path(),
        &[("lab-silent", &profile)],
        "interval_secs = 0.5\nregister_timeout_secs = 3\nbackoff_base_secs = 30",
    );
    let m = start_tls_manager(dir.path(), &env);
    m.submit(array_app("silent", "true", 1));
    let failed = wait_pilot(
        &m,
        "the silent pilot to fail",
        Duration::from_secs(60),
        |p| p["state"] == "failed",
    );
    let reason = failed["reason"].as_str().unwrap();
    assert!(
        reason.contains("without its agent registering; cancelled"),
        "{failed}"
    );
    // Its batch job was cancelled: Slurm no longer runs it.
    let id = failed["batch_job_id"].as_str().unwrap().to_string();
    wait_until(
        "the job to leave the running state",
        Duration::from_secs(30),
        || {
            let out = std::process::Command::new("squeue")
                .args(["-h", "-t", "running,pending", "-j", &id])
                .env("SLURM_CONF", lab::slurm_conf())
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .is_empty()
                .then_some(())
        },
    );
    // Backing off: no second pilot right away.
    assert_eq!(pilots(&m).len(), 1, "{:?}", pilots(&m));
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn pbs_torque_ssh_and_ssh_login_profiles_provision_working_agents() {
    let _lab = lab::require();
    // Groups that do not compete for the same Slurm partition.
    for group in [
        &["lab-pbs", "lab-ssh-slurm", "lab-ssh"][..],
        &["lab-torque"][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
        let profiles: Vec<_> = group
            .iter()
            .map(|n| (*n, lab::shipped_profile(n)))
            .collect();
        let platforms: Vec<(&str, &std::path::Path)> =
            profiles.iter().map(|(n, p)| (*n, p.as_path())).collect();
        let env = configure(dir.path(), &platforms, FAST);
        let m = start_tls_manager(dir.path(), &env);
        let app = m.submit(array_app("paths", "sleep 1", 40));
        let want: BTreeSet<String> = group.iter().map(|n| n.to_string()).collect();
        wait_until(
            &format!("agents registered on {want:?}"),
            Duration::from_secs(120),
            || (platforms_of(&m, "registered") == want).then_some(()),
        );
        let summary = m.wait_finished(app, Duration::from_secs(300));
        assert_eq!(summary["counts"]["done"], 40, "{summary}");
        let all = wait_until("every pilot to end", Duration::from_secs(120), || {
            let ps = pilots(&m);
            ps.iter()
                .all(|p| ["ended", "cancelled"].contains(&p["state"].as_str().unwrap()))
                .then_some(ps)
        });
        for name in group {
            assert!(
                all.iter()
                    .any(|p| p["platform"] == *name && p["state"] == "ended"),
                "{name}: {all:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_partition_typo_blocks_the_application_with_the_checks_reason_before_any_sbatch() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let typo = dir.path().join("lab-typo.toml");
    let text = std::fs::read_to_string(lab::shipped_profile("lab-debug"))
        .unwrap()
        .replace("lab-debug", "lab-typo")
        .replace("queue = \"debug\"", "queue = \"smal\"");
    std::fs::write(&typo, text).unwrap();
    let mut env = configure(dir.path(), &[("lab-typo", &typo)], FAST);
    env.push(("RUST_LOG".into(), "warn".into()));
    let m = start_tls_manager(dir.path(), &env);
    let app = m.submit(array_app("typo", "true", 20));
    let down = wait_until(
        "lab-typo to be unavailable",
        Duration::from_secs(60),
        || platform_status(&m, "lab-typo").filter(|s| s["available"] == false),
    );
    // Caught by the start-up checks, before any sbatch.
    let reason = down["reason"].as_str().unwrap();
    assert!(
        reason.contains("partition `smal` does not exist (partitions: ")
            && reason.contains("small"),
        "{down}"
    );
    assert!(down["failures"].as_u64().unwrap() >= 1, "{down}");
    assert!(!reason.contains('\n'), "one line: {down}");
    let blocked = wait_until(
        "the application to be blocked",
        Duration::from_secs(30),
        || {
            let (_, s) = m.http().get(&format!("/v1/apps/{app}"), &m.admin);
            s["blocked"].as_str().map(String::from)
        },
    );
    assert!(
        blocked.starts_with("no available platform: lab-typo unavailable: platform check failed: ")
            && blocked.contains("partition `smal` does not exist"),
        "{blocked}"
    );
    let out = m.cli(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "application {app} is blocked: no available platform: lab-typo unavailable"
        )),
        "{text}"
    );
    let out = m.cli(&["platforms"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(table.lines().count(), 2, "{table}");
    assert!(
        pilots(&m).is_empty(),
        "no pilot is submitted while the checks fail"
    );
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    assert!(
        log.lines().any(|l| l.contains(" WARN ")
            && l.contains("platform failed its checks")
            && l.contains("smal")),
        "{log}"
    );
    assert!(!log.contains('\u{1b}'), "{log}");
}
