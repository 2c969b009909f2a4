//! `hetpilot logs` on another machine than the agent: the path the agent reported does not
//! exist for the CLI, so the output comes through the manager, which asks the agent for it
//! (only the run's owner or an admin may read it; an agent may send only what it was asked
//! for). The agent here runs in its own directory with a relative work dir, so the paths it
//! reports (`work/output/app-A/task-I.N.out`) name nothing where the CLI runs, as on
//! another machine.

use hetpilot_e2e::{array_app, bin, Manager};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// An agent started in `node` with the relative work dir `work`.
fn agent_elsewhere(m: &Manager, node: &Path) -> Child {
    std::fs::create_dir_all(node).unwrap();
    let log = std::fs::File::create(node.join("agent.log")).unwrap();
    Command::new(bin("hetpilot-agent"))
        .args(["--manager", &m.url, "--platform", "local", "--slots", "1"])
        .args(["--work-dir", "work"])
        .current_dir(node)
        .env("HETPILOT_AGENT_TOKEN", m.agent_token("local"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("starting hetpilot-agent")
}

/// `hetpilot` as the user with `token`.
fn cli_as(m: &Manager, token: &str, args: &[&str]) -> Output {
    Command::new(bin("hetpilot"))
        .args(args)
        .env_remove("HETPILOT_CONFIG")
        .env("HETPILOT_URL", &m.url)
        .env("HETPILOT_TOKEN", token)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn logs_fetch_the_tail_through_the_manager_when_the_node_path_is_not_here() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let mut agent = agent_elsewhere(&m, &dir.path().join("node"));
    let alice = m.create_user("alice");
    let bob = m.create_user("bob");
    let (s, body) = m
        .http()
        .post("/v1/apps", &alice, &array_app("long", "seq 1 300000", 1));
    assert_eq!(s, 200, "{body}");
    let app = body["app"].as_u64().unwrap();
    m.wait_finished(app, Duration::from_secs(60));
    let task = format!("{app}.0");

    let (_, detail) = m.http().get(&format!("/v1/tasks/{task}"), &alice);
    let reported = detail["history"][0]["stdout_path"].as_str().unwrap();
    assert!(
        !Path::new(reported).exists(),
        "{reported} must not exist where the CLI runs"
    );

    let o = cli_as(&m, &alice, &["logs", &task, "--tail", "5"]);
    let out = text(&o);
    let mut lines = out.lines().skip_while(|l| !l.starts_with("--- stdout"));
    let header = lines.next().unwrap_or_else(|| panic!("no stdout in {out}"));
    assert!(header.contains("from the manager"), "{header}");
    let shown: Vec<&str> = lines.take_while(|l| !l.starts_with("--- ")).collect();
    assert_eq!(shown, ["299996", "299997", "299998", "299999", "300000"]);
    let note = String::from_utf8_lossy(&o.stderr);
    assert!(note.contains("showed the last 5 lines"), "{note}");

    // Stored now: read again with a range, and head.
    let out = text(&cli_as(&m, &alice, &["logs", &task, "--head", "2"]));
    assert!(out.contains("\n1\n2\n"), "{out}");

    // Another user gets nothing, through the API or the CLI.
    let (status, _) = m.http().get(&format!("/v1/tasks/{task}/output"), &bob);
    assert_eq!(status, 404);
    let o = cli_as(&m, &bob, &["logs", &task, "--tail", "5"]);
    assert!(!o.status.success(), "{o:?}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("300000"));

    // An agent may send only what the manager asked it for.
    let reg_token = m.agent_token("local");
    let reg =
        serde_json::json!({"platform": "local", "hostname": "h", "cores": 1, "memory_mb": 100});
    let (s, other) = m.http().post("/v1/agents", &reg_token, &reg);
    assert_eq!(s, 200, "{other}");
    let other_id = other["agent"].as_u64().unwrap();
    let put = |agent: u64, token: &str| {
        reqwest::blocking::Client::new()
            .put(format!("{}/v1/agents/{agent}/outputs/{task}/1/out", m.url))
            .bearer_auth(token)
            .body("forged\n")
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(put(other_id, other["credential"].as_str().unwrap()), 403);
    assert_eq!(put(other_id, &alice), 403);
    let out = text(&cli_as(&m, &alice, &["logs", &task, "--tail", "1"]));
    assert!(out.contains("300000") && !out.contains("forged"), "{out}");

    // Forgetting the application removes the output the manager kept.
    let kept = dir.path().join(format!("outputs/app-{app}"));
    assert!(kept.join("task-0.1.out").is_file());
    let o = cli_as(&m, &alice, &["app", "forget", &app.to_string()]);
    assert!(o.status.success(), "{o:?}");
    assert!(!kept.exists(), "{} remains", kept.display());

    let _ = agent.kill();
    let _ = agent.wait();
}

/// A stream longer than `[limits] max_output_mib` is kept from its last that many MiB, and
/// `logs` says how much of it stayed on the node.
#[test]
fn an_output_past_max_output_mib_is_kept_from_its_end_and_logs_says_what_stayed_on_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("manager.toml");
    std::fs::write(&config, "[limits]\nmax_output_mib = 1\n").unwrap();
    let m = Manager::start_with(
        dir.path(),
        hetpilot_e2e::free_port(),
        30.0,
        &[],
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    let mut agent = agent_elsewhere(&m, &dir.path().join("node"));
    let app = m.submit(array_app("long", "seq 1 250000", 1));
    m.wait_finished(app, Duration::from_secs(60));
    let task = format!("{app}.0");
    let whole: String = (1..=250_000).map(|i| format!("{i}\n")).collect();
    let kept_bytes = 1 << 20;
    let skipped = whole.len() - kept_bytes;

    let o = m.cli(&["logs", &task, "--tail", "2"]);
    let out = text(&o);
    assert!(out.contains("from the manager"), "{out}");
    assert!(out.ends_with("\n249999\n250000\n"), "{out}");
    let note = String::from_utf8_lossy(&o.stderr);
    assert!(
        note.contains(
            "stdout: the manager keeps only its last 1.00 MiB (limits.max_output_mib); the first"
        ),
        "{note}"
    );
    assert!(note.contains("are on "), "{note}");

    // What the manager kept is exactly the last MiB, and says how much came before.
    let kept = dir.path().join(format!("outputs/app-{app}/task-0.1.out"));
    assert_eq!(std::fs::read(&kept).unwrap(), &whole.as_bytes()[skipped..]);
    let resp = reqwest::blocking::Client::new()
        .get(format!(
            "{}/v1/tasks/{task}/output?attempt=1&stream=out",
            m.url
        ))
        .bearer_auth(&m.admin)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["x-hetpilot-output-skipped"]
            .to_str()
            .unwrap(),
        skipped.to_string()
    );

    // Its head is where the kept part begins, not the run's first line.
    let o = m.cli(&["logs", &task, "--head", "1"]);
    let out = text(&o);
    let first_kept = whole[skipped..].lines().next().unwrap();
    assert!(out.ends_with(&format!("---\n{first_kept}\n")), "{out}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the first"),
        "{o:?}"
    );

    let _ = agent.kill();
    let _ = agent.wait();
}
