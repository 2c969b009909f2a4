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

/// Task numbers start at 0 and array values where the user said: `tasks` shows each
/// task's input beside its number, `logs` names it, and `--json` carries it.
#[test]
fn tasks_and_logs_show_each_tasks_input_beside_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 2, &[]);
    let o = m.cli(&["submit", "--wait", "--array", "5-7", "--", "echo", "{}"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = m.cli(&["tasks", "1"]);
    let table = text(&o);
    let row = |task: &str| {
        table
            .lines()
            .find(|l| l.starts_with(task))
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>())
    };
    assert_eq!(row("1.0"), Some(vec!["1.0", "5"]), "{table}");
    assert_eq!(row("1.2"), Some(vec!["1.2", "7"]), "{table}");
    let o = m.cli(&["tasks", "1", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(listed[1]["input"], "6", "{listed}");
    assert_eq!(listed[1]["lost_attempts"], 0, "{listed}");
    let o = m.cli(&["logs", "1.2"]);
    assert!(
        text(&o).starts_with("task 1.2 (input 7) attempt 1 of 1 on local/"),
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

/// A key the manager does not know (misspelt, or a top-level key written below a table
/// header, where TOML puts it into that table) stops every command that reads the file,
/// naming the file and the line, instead of being ignored.
#[test]
fn unknown_configuration_keys_stop_serve_and_the_checks_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("site.toml");
    std::fs::write(
        &file,
        format!(
            "listen = \"127.0.0.1:0\"\ndata_dir = {:?}\n[[platforms]]\nname = \"local\"\n\
             store_grant_ttl_secs = 600\n[limits]\nmax_large_request = 2\n",
            dir.path().join("data").display().to_string()
        ),
    )
    .unwrap();
    let config = file.to_str().unwrap();
    for args in [
        vec!["serve", "--config", config],
        vec!["platforms", "check", "--config", config],
        vec!["init", "--check", config],
    ] {
        let o = run_bounded(&args);
        let msg = text(&o);
        assert!(!o.status.success(), "{args:?} accepted the file: {msg}");
        assert!(
            msg.contains(config)
                && msg.contains("line 5: unknown key `platforms[0].store_grant_ttl_secs`")
                && msg.contains("line 7: unknown key `limits.max_large_request`"),
            "{args:?}: {msg}"
        );
    }
    assert!(
        !dir.path().join("data").exists(),
        "serve created its data directory from a refused configuration"
    );
    // The file as meant passes the same check.
    std::fs::write(
        &file,
        "store_grant_ttl_secs = 600\n[limits]\nmax_large_requests = 2\n[[platforms]]\n\
         name = \"local\"\n",
    )
    .unwrap();
    let o = run_bounded(&["init", "--check", config]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Runs the CLI, killing it after 30 s (a `serve` that accepted its file would run on).
fn run_bounded(args: &[&str]) -> Output {
    let mut child = std::process::Command::new(hetpilot_e2e::bin("hetpilot"))
        .args(args)
        .env_remove("HETPILOT_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ended = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < ended {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}
