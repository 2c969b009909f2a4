//! Zero-work agents (`hetpilot-agent --zero-work`) measure hetpilot itself: refused by a
//! manager that does not allow them; where allowed, their tasks end without a process
//! and their runs are marked in the store and in `hetpilot report`.

use hetpilot_e2e::{array_app, free_port, Manager};
use std::time::Duration;

#[test]
fn zero_work_agents_are_refused_unless_allowed_and_their_runs_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let mut refused = m.agent("local", 4, &["--zero-work"]);
    let code = refused.wait_exit(Duration::from_secs(60));
    assert_ne!(code, Some(0), "a zero-work agent must not run here");
    assert!(
        refused.log().contains("allow_zero_work = true"),
        "{}",
        refused.log()
    );
    drop(m);

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hetpilot.toml");
    std::fs::write(&config, "allow_zero_work = true\n").unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    let _agent = m.agent("local", 16, &["--zero-work"]);
    // A command that would fail if it ran: zero-work tasks run nothing.
    let app = m.submit(array_app("nothing", "/bin/false", 5000));
    let s = m.wait_finished(app, Duration::from_secs(300));
    assert_eq!(s["counts"]["done"], 5000, "{s}");
    let marked: i64 = m
        .db()
        .query_row(
            "SELECT COUNT(*) FROM attempts a JOIN agents g ON g.id = a.agent_id
             WHERE a.app_id = ?1 AND g.zero_work = 1 AND a.outcome = 'success'",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(marked, 5000);
    let out = m.cli(&["report", &app.to_string()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("5000 of these runs were zero-work"), "{text}");
}
