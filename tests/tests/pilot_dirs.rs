//! Ended pilots' directories are removed `[provision] pilot_dir_retention_secs` after the
//! pilot ended; the end of their batch output is kept in the manager's data directory.

use hetpilot_e2e::lab::{configure, local_profile, pilots, start_manager};
use hetpilot_e2e::{array_app, wait_until};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

#[test]
fn an_ended_pilots_directory_is_removed_after_its_retention_and_its_logs_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let profile = local_profile(dir.path(), "here", 1, "max_queued = 1\nmax_running = 1");
    let env = configure(
        dir.path(),
        &[("here", &profile)],
        "interval_secs = 0.3\nbackoff_base_secs = 1\npilot_dir_retention_secs = 1",
    );
    let m = start_manager(dir.path(), &env);
    let app = m.submit(array_app("leaves-no-dirs", "echo hi", 2));
    let summary = m.wait_finished(app, Duration::from_secs(120));
    assert_eq!(summary["counts"]["done"], 2, "{summary}");
    let name = wait_until("a pilot to register", Duration::from_secs(30), || {
        pilots(&m)
            .iter()
            .find(|p| p["agent"].is_u64())
            .map(|p| p["name"].as_str().unwrap().to_string())
    });
    let pilot_dir = dir.path().join("pilots").join(&name);
    let record = wait_until(
        "its directory to be removed",
        Duration::from_secs(90),
        || {
            pilots(&m)
                .into_iter()
                .find(|p| p["name"] == name.as_str() && p["dir_removed_ms"].is_u64())
        },
    );
    assert_eq!(record["state"], "ended", "{record}");
    assert!(
        record["dir_removed_ms"].as_u64() >= Some(record["ended_ms"].as_u64().unwrap() + 1000),
        "removed only after the retention: {record}"
    );
    assert!(
        !pilot_dir.exists(),
        "{} is still there",
        pilot_dir.display()
    );
    // Its batch output is kept, private: the agent's own log went to stderr.
    let kept = dir.path().join("pilot-logs").join(&name);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&kept), 0o700);
    for stream in ["out", "err"] {
        let file = kept.join(format!("{name}.{stream}"));
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    let err = std::fs::read_to_string(kept.join(format!("{name}.err"))).unwrap();
    assert!(err.contains("regist"), "the agent's log: {err}");
}
