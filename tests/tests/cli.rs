//! The `hetpilot` CLI against a real manager: bad input is refused with a message naming
//! the file, line and field, nothing is stored, and the normal path works end to end.

use hetpilot_e2e::Manager;
use std::process::Output;

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn stored_apps(m: &Manager) -> usize {
    m.http()
        .get("/v1/apps", &m.admin)
        .1
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn bad_application_input_is_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let file = dir.path().join("broken.toml");
    std::fs::write(
        &file,
        "name = \"x\"\ncommand = \"run {}\"\n[tasks]\narray = \"1-3\"\ncpus = 4\n",
    )
    .unwrap();
    let o = m.cli(&["submit", file.to_str().unwrap()]);
    assert!(!o.status.success());
    let msg = text(&o);
    assert!(
        msg.contains("broken.toml:5") && msg.contains("cpus"),
        "{msg}"
    );

    std::fs::write(
        &file,
        "command = \"run {sample}\"\n[tasks]\narray = \"1-3\"\n",
    )
    .unwrap();
    let msg = text(&m.cli(&["submit", file.to_str().unwrap()]));
    assert!(
        msg.contains("broken.toml:1: field `command`")
            && msg.contains("unknown placeholder `{sample}`"),
        "{msg}"
    );

    let o = m.cli(&["submit", "--array", "1-3", "--", "run", "{input}"]);
    assert!(
        !o.status.success() && text(&o).contains("unknown placeholder `{input}`"),
        "{}",
        text(&o)
    );

    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n\n").unwrap();
    let o = m.cli(&[
        "submit",
        "--each-line",
        empty.to_str().unwrap(),
        "--",
        "echo",
        "{}",
    ]);
    assert!(
        !o.status.success() && text(&o).contains("task list is empty"),
        "{}",
        text(&o)
    );

    let o = m.cli(&["submit", dir.path().join("missing.toml").to_str().unwrap()]);
    assert!(
        !o.status.success() && text(&o).contains("missing.toml"),
        "{}",
        text(&o)
    );
    assert_eq!(stored_apps(&m), 0);
}

#[test]
fn submit_wait_tasks_and_logs_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 2, &[]);
    let inputs = dir.path().join("inputs.txt");
    std::fs::write(&inputs, "alpha\nbeta\ngamma\n").unwrap();
    let o = m.cli(&[
        "submit",
        "--each-line",
        inputs.to_str().unwrap(),
        "--max-attempts",
        "1",
        "--",
        "sh",
        "-c",
        "echo hello $HETPILOT_INPUT; test $HETPILOT_INPUT != beta",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("submitted application 1"), "{}", text(&o));
    let o = m.cli(&["wait", "1"]);
    assert!(
        !o.status.success(),
        "one task fails, so wait reports failure"
    );
    assert!(text(&o).contains("1 failed"), "{}", text(&o));
    let o = m.cli(&["tasks", "1", "--state", "failed", "--json"]);
    let failed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(failed.as_array().unwrap().len(), 1);
    assert_eq!(failed[0]["input"], "beta");
    let o = m.cli(&["logs", "1.0"]);
    assert!(text(&o).contains("hello alpha"), "{}", text(&o));
    let o = m.cli(&["status", "--json"]);
    let apps: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(apps[0]["counts"]["done"], 2);
    let o = m.cli(&["tasks", "1", "--state", "sideways"]);
    assert!(
        !o.status.success() && text(&o).contains("unknown state"),
        "{}",
        text(&o)
    );
}

#[test]
fn submit_wait_returns_with_the_end_and_its_exit_code_says_how_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 2, &[]);
    let ok = m.cli(&["submit", "--wait", "--json", "--array", "1-3", "--", "true"]);
    assert!(ok.status.success(), "{}", text(&ok));
    let summary: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(summary["counts"]["done"], 3, "{summary}");
    let bad = m.cli(&[
        "submit",
        "--wait",
        "--max-attempts",
        "1",
        "--array",
        "1-2",
        "--",
        "false",
    ]);
    assert!(!bad.status.success(), "{}", text(&bad));
    assert!(text(&bad).contains("ended with 2 failed"), "{}", text(&bad));

    // The long poll answers when a task ends, not before: asked right after the submit of
    // a one-second task, it comes back with the task done (an answer at once would not).
    let http = m.http();
    let (s, b) = http.post(
        "/v1/apps",
        &m.admin,
        &hetpilot_e2e::array_app("one", "sleep 1", 1),
    );
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    let (s, v) = http.get(&format!("/v1/apps/{app}?wait_ms=60000&seen=0"), &m.admin);
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["counts"]["done"], 1, "{v}");
    // Hostile query values: not a number is refused; the largest numbers are bounded (a
    // finished application answers at once, whatever the wait asked for).
    let (s, _) = http.get(&format!("/v1/apps/{app}?wait_ms=soon&seen=0"), &m.admin);
    assert_eq!(s, 400);
    let (s, _) = http.get(&format!("/v1/apps/{app}?wait_ms=1&seen=-1"), &m.admin);
    assert_eq!(s, 400);
    let max = u64::MAX;
    let (s, v) = http.get(
        &format!("/v1/apps/{app}?wait_ms={max}&seen={max}"),
        &m.admin,
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["counts"]["done"], 1, "{v}");
    // Another user's application is not theirs to wait on.
    let bob = m.create_user("bob");
    let (s, _) = http.get(&format!("/v1/apps/{app}?wait_ms=1000&seen=0"), &bob);
    assert_eq!(s, 404);
}
