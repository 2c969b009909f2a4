//! Idle agents hear of new work at once, whatever kind of submission brings it: the time
//! from `hetpilot submit` to the first task's start, on agents idle in their 20 s long
//! poll, stays far below that poll for arrays, each-line bags, application files,
//! data-intensive bags, WfCommons and DAX workflows and `[[task]]` files with `after`.
//! The bound checks that no kind waits for the poll to expire, not a latency target
//! (`cargo bench -p hetpilot-e2e --bench wake_ups` measures that).

use hetpilot_e2e::{wait_until, Manager};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Far below the agents' 20 s long poll, far above a wake-up on a loaded machine.
const BOUND: Duration = Duration::from_secs(5);

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A manager with two idle local agents of 4 slots each, both registered.
fn idle_agents(dir: &Path) -> (Manager, Vec<hetpilot_e2e::Agent>) {
    let m = Manager::start(dir, 30.0);
    let agents = vec![m.agent("local", 4, &[]), m.agent("local", 4, &[])];
    wait_until("two agents to register", Duration::from_secs(30), || {
        let (status, body) = m.http().get("/v1/agents", &m.admin);
        assert_eq!(status, 200, "{body}");
        let active = body
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["state"] == "active")
            .count();
        (active == 2).then_some(())
    });
    (m, agents)
}

/// Submits with the CLI; returns the application and the milliseconds from the submit's
/// start to its first task's start (manager clock, same host).
fn submit_to_first_start(m: &Manager, args: &[&str]) -> (u64, i64) {
    let submitted = unix_ms();
    let out = m.cli(args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let app = answer["app"].as_u64().unwrap();
    let started: i64 = wait_until("the first task to start", Duration::from_secs(60), || {
        m.db()
            .query_row(
                "SELECT MIN(started_ms) FROM attempts WHERE app_id = ?1",
                [app as i64],
                |r| r.get::<_, Option<i64>>(0),
            )
            .unwrap()
    });
    (app, started - submitted)
}

/// Each kind of submission, as the CLI takes it, from files written in `dir`.
fn kinds(m: &Manager, dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/workflows");
    let lines = dir.join("lines.txt");
    std::fs::write(&lines, "a\nb\nc\n").unwrap();
    let app_file = dir.join("app.toml");
    std::fs::write(
        &app_file,
        "name = \"params\"\ncommand = \"echo {x}\"\n[tasks]\nparams = [{ x = \"1\" }, { x = \"2\" }]\n",
    )
    .unwrap();
    let resp = reqwest::blocking::Client::new()
        .put(format!("{}/v1/files/wake/in.txt", m.url))
        .bearer_auth(&m.admin)
        .body(b"staged input\n".to_vec())
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let bag = dir.join("bag.toml");
    std::fs::write(
        &bag,
        "name = \"bag\"\ncommand = \"cat in.txt\"\ndata_intensive = true\n\
         inputs = [\"wake/in.txt\"]\n[tasks]\nparams = [{ x = \"1\" }, { x = \"2\" }]\n",
    )
    .unwrap();
    let chain = dir.join("chain.toml");
    std::fs::write(
        &chain,
        "name = \"chain\"\n[[task]]\nid = \"first\"\ncommand = \"true\"\n\
         [[task]]\nid = \"second\"\ncommand = \"true\"\nafter = [\"first\"]\n",
    )
    .unwrap();
    let emulate = [
        "--emulate",
        "--time-scale",
        "0.001",
        "--size-scale",
        "0.0001",
    ];
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let with = |head: Vec<String>, tail: &[&str]| {
        let mut v = head;
        v.extend(tail.iter().map(|s| s.to_string()));
        v
    };
    vec![
        (
            "array",
            with(
                vec![],
                &["submit", "--json", "--array", "0-3", "--", "true"],
            ),
        ),
        (
            "each-line",
            with(
                vec![
                    "submit".into(),
                    "--json".into(),
                    "--each-line".into(),
                    path(&lines),
                ],
                &["--", "echo", "{}"],
            ),
        ),
        (
            "application file",
            vec!["submit".into(), "--json".into(), path(&app_file)],
        ),
        (
            "data-intensive bag",
            vec!["submit".into(), "--json".into(), path(&bag)],
        ),
        (
            "[[task]] with after",
            vec!["submit".into(), "--json".into(), path(&chain)],
        ),
        (
            "WfCommons",
            with(
                vec![
                    "submit".into(),
                    "--json".into(),
                    "--wfcommons".into(),
                    path(&samples.join("blast-chameleon-small-001.json")),
                ],
                &emulate,
            ),
        ),
        (
            "DAX",
            with(
                vec![
                    "submit".into(),
                    "--json".into(),
                    "--dax".into(),
                    path(&samples.join("Montage_25.xml")),
                ],
                &emulate,
            ),
        ),
    ]
}

#[test]
fn every_kind_of_submission_wakes_idle_agents_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (m, _agents) = idle_agents(dir.path());
    let mut slow = Vec::new();
    for (kind, args) in kinds(&m, dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (app, ms) = submit_to_first_start(&m, &args);
        eprintln!("{kind}: submit to first start {ms} ms");
        if ms >= BOUND.as_millis() as i64 {
            slow.push(format!("{kind}: {ms} ms"));
        }
        // The next kind starts on idle agents again.
        let summary = m.wait_finished(app, Duration::from_secs(120));
        assert_eq!(
            summary["counts"]["failed"], 0,
            "{kind} ran without failures: {summary}"
        );
    }
    assert!(
        slow.is_empty(),
        "submissions whose first task waited out the agents' long poll: {slow:?}"
    );
}
