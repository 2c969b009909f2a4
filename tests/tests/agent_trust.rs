//! The agent as a trust boundary: what a submitted task or application can do to the agent
//! and to other users' tasks on it. Hostile timeouts, the registration token's exposure to
//! tasks, the agent's work directory, and the bubblewrap sandbox between users' tasks.

use hetpilot_e2e::{array_app, signal, Manager};
use serde_json::{json, Value};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

fn tasks(m: &Manager, app: u64, state: &str) -> Vec<Value> {
    let (s, b) = m.http().get(
        &format!("/v1/apps/{app}/tasks?state={state}&limit=100000"),
        &m.admin,
    );
    assert_eq!(s, 200, "{b}");
    b.as_array().unwrap().clone()
}

/// The probe that jammed an agent: `--timeout 9223372036854775807s` is refused at submit,
/// naming the field, through the API and the CLI.
#[test]
fn a_timeout_past_the_bound_is_refused_at_submit() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let mut spec = array_app("huge", "/bin/sleep 2", 2);
    spec["timeout_secs"] = json!(9_223_372_036_854_775_807u64);
    let (s, b) = m.http().post("/v1/apps", &m.admin, &spec);
    assert_eq!(s, 400, "{b}");
    assert!(b.to_string().contains("timeout_secs"), "{b}");
    let out = m.cli(&[
        "submit",
        "--array",
        "1-2",
        "--timeout",
        "9223372036854775807s",
        "--",
        "/bin/sleep",
        "2",
    ]);
    assert!(!out.status.success(), "the CLI submit must fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("timeout"), "{err}");
}

/// The longest allowed timeout runs and reports like any task, a short one still kills,
/// and the agent still drains on SIGTERM afterwards (its slots were freed).
#[test]
fn tasks_with_long_and_short_timeouts_free_their_slots() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let mut agent = m.agent("local", 2, &[]);
    let mut long = array_app("long", "/bin/sleep 0.5", 2);
    long["timeout_secs"] = json!(hetpilot_shared::spec::MAX_TIMEOUT_SECS);
    let long = m.submit(long);
    let mut short = array_app("short", "/bin/sleep 30", 1);
    short["timeout_secs"] = json!(1);
    short["max_attempts"] = json!(1);
    let short = m.submit(short);
    assert_eq!(m.wait_finished(long, LONG)["counts"]["done"], 2);
    m.wait_finished(short, LONG);
    let failed = tasks(&m, short, "failed");
    assert_eq!(failed[0]["last"]["outcome"], "timed_out", "{failed:?}");
    let wall: f64 = m
        .db()
        .query_row(
            "SELECT wall_ms FROM attempts WHERE app_id = ?1",
            [short as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert!((900.0..20_000.0).contains(&wall), "killed at 1 s: {wall}");
    signal(&agent.child, libc::SIGTERM);
    assert_eq!(agent.wait_exit(LONG), Some(0), "{}", agent.log());
}
