//! Profile changes without a restart: `serve` checks its platforms at start, in the
//! background, and shows a failed check as the platform's status; `hetpilot platforms
//! reload` and SIGHUP re-read the profiles and re-check them, and a reason that stopped
//! being true is gone.

use hetpilot_e2e::lab::{configure, local_profile, platform_status};
use hetpilot_e2e::{signal, wait_until, Manager};
use std::path::Path;
use std::time::Duration;

const MISSING_AGENT: &str = "/nonexistent/hetpilot-agent";

/// The `local` profile of platform `here`, with an agent binary that is not there.
fn break_profile(profile: &Path) {
    point_agent_at(profile, Path::new(MISSING_AGENT));
}

/// Makes `profile`'s agent binary `agent`.
fn point_agent_at(profile: &Path, agent: &Path) {
    let text = std::fs::read_to_string(profile).unwrap();
    let broken: String = text
        .lines()
        .map(|l| {
            if l.starts_with("agent_binary") {
                format!("agent_binary = \"{}\"\n", agent.display())
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert_ne!(broken, text);
    std::fs::write(profile, broken).unwrap();
}

fn status_where(
    m: &Manager,
    what: &str,
    f: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    wait_until(what, Duration::from_secs(30), || {
        platform_status(m, "here").filter(|s| f(s))
    })
}

#[test]
fn a_broken_profile_shows_its_failed_check_and_a_reload_clears_it_once_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let profile = local_profile(dir.path(), "here", 1, "max_running = 1");
    break_profile(&profile);
    let env = configure(dir.path(), &[("here", &profile)], "interval_secs = 0.3");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let m = Manager::start_on(dir.path(), hetpilot_e2e::free_port(), 10.0, &env);

    // Checked at start, without anyone asking: unavailable, saying what failed.
    let broken = status_where(&m, "the start-up check to fail", |s| {
        s["available"] == false && s["reason"].as_str().unwrap_or("").contains(MISSING_AGENT)
    });
    assert!(
        broken["reason"].as_str().unwrap().contains("agent binary"),
        "{broken}"
    );

    // Fixed on disk: nothing changes until a reload.
    local_profile(dir.path(), "here", 1, "max_running = 1");
    let out = m.cli(&["platforms", "reload"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("here"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let fixed = status_where(&m, "the reloaded profile to pass", |s| {
        s["available"] == true
    });
    assert!(
        !fixed["reason"]
            .as_str()
            .unwrap_or("")
            .contains(MISSING_AGENT),
        "the old reason lingers: {fixed}"
    );

    // SIGHUP re-reads and re-checks them too.
    break_profile(&profile);
    signal(&m.child, libc::SIGHUP);
    status_where(&m, "the SIGHUP re-check to fail", |s| {
        s["available"] == false && s["reason"].as_str().unwrap_or("").contains(MISSING_AGENT)
    });

    // A profile that cannot be read is refused by name; the running one is kept.
    std::fs::write(&profile, "name = \"here\"\nadapter = \"nonsense\"\n").unwrap();
    let out = m.cli(&["platforms", "reload"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not reloaded") && err.contains("here.toml"),
        "{err}"
    );
    assert!(platform_status(&m, "here").is_some());

    // Only the admin may reload.
    let alice = m.create_user("alice");
    let (code, _) = m
        .http()
        .post("/v1/platforms/reload", &alice, &serde_json::json!({}));
    assert_eq!(code, 403);
}

#[test]
fn a_platform_failing_its_checks_is_checked_again_and_used_once_they_pass() {
    let dir = tempfile::tempdir().unwrap();
    let profile = local_profile(dir.path(), "here", 1, "max_running = 1");
    let agent = dir.path().join("later").join("hetpilot-agent");
    point_agent_at(&profile, &agent);
    let env = configure(
        dir.path(),
        &[("here", &profile)],
        "interval_secs = 0.3\nbackoff_base_secs = 0.2\nbackoff_max_secs = 0.5",
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let m = Manager::start_on(dir.path(), hetpilot_e2e::free_port(), 10.0, &env);
    let app = m.submit(hetpilot_e2e::array_app("later", "true", 3));
    let failing = status_where(&m, "the checks to fail twice", |s| {
        s["available"] == false && s["failures"].as_u64().unwrap_or(0) >= 2
    });
    assert!(
        failing["reason"]
            .as_str()
            .unwrap()
            .contains("later/hetpilot-agent"),
        "{failing}"
    );
    // The binary appears (as when the login host's file system comes back): no reload.
    std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
    std::fs::copy(hetpilot_e2e::bin("hetpilot-agent"), &agent).unwrap();
    let up = status_where(&m, "the re-check to pass", |s| s["available"] == true);
    assert!(
        !up["reason"].as_str().unwrap_or("").contains("later"),
        "{up}"
    );
    let summary = m.wait_finished(app, Duration::from_secs(60));
    assert_eq!(summary["counts"]["done"], 3, "{summary}");
}
