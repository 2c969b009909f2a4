//! Failures reach people without anyone polling, on pilots forked on this machine (the
//! `local` adapter): pilots that keep failing the same way make their platform
//! unavailable with that reason, logged at WARN (plain text in a log file, JSON on
//! request); an application no platform can run says why in `hetpilot status`; and a
//! platform's pilots are planned with the slots their agents register, not the profile's
//! cores, with a warning.

use hetpilot_e2e::lab::{configure, local_profile, pilots, platform_status, start_manager};
use hetpilot_e2e::{array_app, bin, free_port, wait_until, Manager};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const FAST: &str = "interval_secs = 0.2\nbackoff_base_secs = 0.5\nbackoff_max_secs = 60";

/// A manager whose only platform, `broken`, starts pilots whose agent exits at once
/// without registering (it answers only the `--version` of the platform checks `serve`
/// runs at start, so the platform passes them); `extra` are more environment variables.
fn broken_platform(dir: &Path, extra: &[(&str, &str)], flags: &[&str]) -> Manager {
    let profile = local_profile(dir, "broken", 2, "max_queued = 1\nmax_running = 1");
    let agent = dir.join("exits-at-once");
    std::fs::write(
        &agent,
        "#!/bin/sh\n[ \"${1:-}\" = --version ] && { echo stand-in; exit 0; }\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = std::fs::read_to_string(&profile).unwrap().replace(
        &bin("hetpilot-agent").display().to_string(),
        &agent.display().to_string(),
    );
    std::fs::write(&profile, text).unwrap();
    let mut env: Vec<(String, String)> = configure(dir, &[("broken", &profile)], FAST);
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Manager::start_with(dir, free_port(), 10.0, flags, &env)
}

/// Waits until platform `name` is unavailable; returns its status.
fn unavailable(m: &Manager, name: &str) -> Value {
    wait_until(
        &format!("{name} to be unavailable"),
        Duration::from_secs(60),
        || platform_status(m, name).filter(|s| s["available"] == false),
    )
}

#[test]
fn pilots_failing_the_same_way_make_the_platform_unavailable_and_the_application_blocked() {
    let dir = tempfile::tempdir().unwrap();
    // The default log level (warnings only), as a site runs it.
    let m = broken_platform(dir.path(), &[("RUST_LOG", "warn")], &[]);
    let app = m.submit(array_app("stuck", "true", 20));
    let down = unavailable(&m, "broken");
    let reason = down["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("2 pilots in a row failed: batch job ended before its agent registered"),
        "{down}"
    );
    let failed = pilots(&m);
    assert!(
        failed.len() >= 2 && failed.iter().all(|p| p["state"] == "failed"),
        "{failed:?}"
    );

    // The application's summary says why nothing runs it, and so does `hetpilot status`.
    let (_, summary) = m.http().get(&format!("/v1/apps/{app}"), &m.admin);
    let blocked = summary["blocked"].as_str().unwrap_or_default();
    assert!(
        blocked.starts_with("no available platform: broken unavailable: 2 pilots in a row failed"),
        "{summary}"
    );
    let out = m.cli(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.lines().nth(1).unwrap_or_default().contains("blocked"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "application {app} is blocked: no available platform: broken"
        )),
        "{text}"
    );
    // `hetpilot wait` says so too, while it waits (off a terminal: on stderr).
    let mut wait = std::process::Command::new(hetpilot_e2e::bin("hetpilot"))
        .args(["wait", &app.to_string()])
        .env("HETPILOT_URL", &m.url)
        .env("HETPILOT_TOKEN", &m.admin)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = wait.stderr.take().unwrap();
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = said.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            sink.lock().unwrap().push_str(&line);
        }
    });
    hetpilot_e2e::wait_until(
        "wait to say why",
        std::time::Duration::from_secs(60),
        || {
            said.lock()
                .unwrap()
                .contains(&format!(
                    "application {app} is blocked: no available platform: broken"
                ))
                .then_some(())
        },
    );
    let _ = wait.kill();
    let _ = wait.wait();
    let out = m.cli(&["platforms"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 2, "one line per platform: {text}");
    assert!(text.contains("unavailable  "), "{text}");

    // The manager's log told whoever reads it, at WARN, in plain text.
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    let warned = |what: &str| {
        log.lines()
            .any(|l| l.contains(" WARN ") && l.contains(what) && l.contains("platform=broken"))
    };
    assert!(warned("pilot failed"), "{log}");
    assert!(warned("platform unavailable"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "no colour codes in a log file: {log}"
    );
}

#[test]
fn the_manager_logs_json_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let m = broken_platform(dir.path(), &[], &["--log-format", "json"]);
    m.submit(array_app("stuck", "true", 2));
    unavailable(&m, "broken");
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let warning = lines
        .iter()
        .find(|l| l["level"] == "WARN" && l["fields"]["message"] == "platform unavailable")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(warning["fields"]["platform"], "broken", "{warning}");
}

#[test]
fn an_application_no_agent_can_run_is_blocked_until_one_can() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 10.0);
    let mut wide = array_app("wide", "true", 2);
    wide["cores"] = 4.into();
    let wide = m.submit(wide);
    let narrow = m.submit(array_app("narrow", "true", 2));
    let blocked = |app: u64| {
        let (_, s) = m.http().get(&format!("/v1/apps/{app}"), &m.admin);
        s["blocked"].as_str().map(String::from)
    };
    assert_eq!(
        blocked(narrow).as_deref(),
        Some("no available platform: local: no agent registered")
    );
    let _agent = m.agent("local", 2, &[]);
    m.wait_finished(narrow, Duration::from_secs(60));
    assert_eq!(blocked(narrow), None, "finished");
    assert_eq!(
        blocked(wide).as_deref(),
        Some("no available platform: local: nodes of 2 cores, the application needs 4")
    );
}

#[test]
fn pilots_are_planned_with_the_slots_their_agents_register() {
    let dir = tempfile::tempdir().unwrap();
    // The profile says 4 cores a node; the pilots' agents are told to run 1 task at once.
    let profile = local_profile(
        dir.path(),
        "narrow",
        4,
        "max_queued = 1\nmax_running = 3\nsetup = [\"export HETPILOT_SLOTS=1\"]",
    );
    let env = configure(dir.path(), &[("narrow", &profile)], FAST);
    let m = start_manager(dir.path(), &env);
    // Six tasks: a first pilot's agent takes two (one to run, one ahead), which leaves 4
    // cores of work: one more pilot at 4 cores a pilot; at 1 slot each, max_running.
    let app = m.submit(array_app("many", "sleep 2", 6));
    wait_until("three live pilots", Duration::from_secs(60), || {
        let live = pilots(&m)
            .into_iter()
            .filter(|p| p["state"] == "running" || p["state"] == "queued")
            .count();
        (live >= 3).then_some(())
    });
    let (_, agents) = m.http().get("/v1/agents", &m.admin);
    assert!(
        agents.as_array().unwrap().iter().all(|a| a["slots"] == 1),
        "{agents}"
    );
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    assert!(
        log.lines().any(|l| l.contains(" WARN ")
            && l.contains("platform=narrow")
            && l.contains("register 1 slots where its profile says cores_per_node = 4")),
        "{log}"
    );
    m.wait_finished(app, Duration::from_secs(120));
}
