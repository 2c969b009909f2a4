//! The task-event stream (`GET /v1/apps/{app}/events`) against a real manager and agent:
//! every end arrives once, in cursor order, and the stream ends with the application; a
//! dropped stream resumed past its cursor, also across a manager restart, loses and
//! doubles nothing; the route's user checks, cursor bounds and per-user cap hold; and
//! `hetpilot wait --events` prints the ends.

use hetpilot_e2e::{array_app, free_port, poll_until, wait_until, Manager};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Lines};
use std::time::Duration;

/// One open stream, read a line at a time.
struct Stream {
    lines: Lines<BufReader<reqwest::blocking::Response>>,
}

/// Opens `app`'s stream as `token` past `after` (raw query text); the refusal's status and
/// body otherwise.
fn open(m: &Manager, token: &str, app: u64, after: &str) -> Result<Stream, (u16, Value)> {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let resp = client
        .get(format!("{}/v1/apps/{app}/events?after={after}", m.url))
        .bearer_auth(token)
        .send()
        .expect("HTTP call");
    let status = resp.status().as_u16();
    if status != 200 {
        return Err((status, resp.json().unwrap_or(Value::Null)));
    }
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert_eq!(content_type, "application/x-ndjson");
    Ok(Stream {
        lines: BufReader::new(resp).lines(),
    })
}

impl Stream {
    /// The next event that is not a keepalive; None when the stream closed.
    fn next(&mut self) -> Option<Value> {
        loop {
            let line = self.lines.next()?.expect("reading the stream");
            let event: Value = serde_json::from_str(&line).expect("each line is JSON");
            if event["type"] != "keepalive" {
                return Some(event);
            }
        }
    }

    /// The next `n` task ends.
    fn ends(&mut self, n: usize) -> Vec<Value> {
        (0..n)
            .map(|_| {
                let e = self.next().expect("an end before the stream closed");
                assert_eq!(e["type"], "task_end", "{e}");
                e
            })
            .collect()
    }

    /// Every task end up to the application's end, and that last event; the stream then
    /// closes.
    fn rest(mut self) -> (Vec<Value>, Value) {
        let mut ends = Vec::new();
        loop {
            let e = self
                .next()
                .expect("the application's end before the stream closed");
            if e["type"] == "app_end" {
                assert!(
                    self.next().is_none(),
                    "nothing follows the application's end"
                );
                return (ends, e);
            }
            assert_eq!(e["type"], "task_end", "{e}");
            ends.push(e);
        }
    }
}

fn cursor(end: &Value) -> u64 {
    end["cursor"].as_u64().expect("every end has a cursor")
}

/// Each index in `ends` once, every index of `0..n`, and cursors growing.
fn assert_each_task_once(ends: &[Value], n: u64) {
    let indexes: Vec<u64> = ends
        .iter()
        .map(|e| e["task"]["index"].as_u64().unwrap())
        .collect();
    let distinct: BTreeSet<u64> = indexes.iter().copied().collect();
    assert_eq!(
        indexes.len(),
        distinct.len(),
        "an end came twice: {indexes:?}"
    );
    assert_eq!(distinct, (0..n).collect(), "every task's end arrived");
    let cursors: Vec<u64> = ends.iter().map(cursor).collect();
    assert!(
        cursors.windows(2).all(|w| w[0] < w[1]),
        "cursors grow along the stream: {cursors:?}"
    );
}

#[test]
fn every_end_arrives_once_with_its_result_and_the_stream_ends_with_the_application() {
    const N: u64 = 24;
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    // Indexes 20 and up fail, once each.
    let mut spec = array_app("events", "sh -c 'echo out-{index}; test {index} -lt 20'", N);
    spec["max_attempts"] = json!(1);
    let app = m.submit(spec);
    // Opened before any agent: every end is followed live.
    let stream = open(&m, &m.admin, app, "0").unwrap();
    let _agent = m.agent("local", 3, &[]);
    let (ends, last) = stream.rest();
    assert_each_task_once(&ends, N);
    for e in &ends {
        let index = e["task"]["index"].as_u64().unwrap();
        assert_eq!(e["task"]["app"], app);
        let (state, code) = if index < 20 {
            ("done", 0)
        } else {
            ("failed", 1)
        };
        assert_eq!(e["state"], state, "{e}");
        assert_eq!(e["exit_code"], code, "{e}");
        assert_eq!(e["attempt"], 1, "{e}");
        assert!(e["wall_ms"].as_f64().unwrap() > 0.0, "{e}");
        assert!(e["host"].is_string(), "{e}");
        let stdout = e["stdout_path"].as_str().expect("where stdout went");
        let text = std::fs::read_to_string(stdout).unwrap();
        assert_eq!(text, format!("out-{index}\n"), "{e}");
    }
    assert_eq!(last["app"], app);
    assert_eq!(last["counts"]["done"], 20);
    assert_eq!(last["counts"]["failed"], 4);

    // A finished application's stream replays its ends and closes; past the last cursor
    // it is only the application's end.
    let (again, _) = open(&m, &m.admin, app, "0").unwrap().rest();
    assert_eq!(again, ends, "the stream is the same stream every time");
    let tail = cursor(ends.last().unwrap()).to_string();
    let (none, last) = open(&m, &m.admin, app, &tail).unwrap().rest();
    assert!(none.is_empty(), "{none:?}");
    assert_eq!(last["type"], "app_end");

    // The CLI prints the same ends, then the application's end, and fails since some did.
    let out = m.cli(&["wait", &app.to_string(), "--events", "--json"]);
    assert!(!out.status.success(), "4 tasks failed: {out:?}");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, N + 1, "{lines:?}");
    assert_eq!(&lines[..N as usize], &ends[..]);
    assert_eq!(lines[N as usize]["type"], "app_end");
    let human = m.cli(&["wait", &app.to_string(), "--events", "--after", &tail]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        !text.contains(" done "),
        "nothing past the last cursor: {text}"
    );
}

#[test]
fn a_dropped_stream_resumed_past_its_cursor_loses_and_doubles_nothing_across_a_restart() {
    const N: u64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut m = Manager::start_on(dir.path(), port, 30.0, &[]);
    let app = m.submit(array_app("resume", "sh -c 'sleep 0.05'", N));
    let agent = m.agent("local", 2, &[]);
    let mut seen = Vec::new();
    // Dropped twice while tasks keep ending.
    for _ in 0..2 {
        let after = seen.last().map_or(0, cursor).to_string();
        let mut stream = open(&m, &m.admin, app, &after).unwrap();
        seen.extend(stream.ends(7));
    }
    m.wait_finished(app, Duration::from_secs(120));
    drop(agent);
    // Then once more, and the manager is killed: the cursor stands after its restart.
    let mut stream = open(&m, &m.admin, app, &cursor(seen.last().unwrap()).to_string()).unwrap();
    seen.extend(stream.ends(5));
    drop(stream);
    m.kill();
    let m = Manager::start_on(dir.path(), port, 30.0, &[]);
    let after = cursor(seen.last().unwrap()).to_string();
    let (rest, last) = open(&m, &m.admin, app, &after).unwrap().rest();
    seen.extend(rest);
    assert_each_task_once(&seen, N);
    assert_eq!(last["counts"]["done"], N);
}

#[test]
fn another_users_application_is_404_and_a_bad_cursor_is_400_naming_after() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let app = m.submit(array_app("mine", "true", 1));
    let bob = m.create_user("bob");
    let (status, body) = open(&m, &bob, app, "0").err().unwrap();
    assert_eq!(status, 404, "{body}");
    let (status, _) = open(&m, &bob, 999_999, "0").err().unwrap();
    assert_eq!(status, 404, "a missing application looks the same");
    let (status, _) = open(&m, "not-a-token", app, "0").err().unwrap();
    assert_eq!(status, 401);
    for bad in [
        "x",
        "-1",
        "1.5",
        "9223372036854775808",
        "%00",
        &"9".repeat(5000),
    ] {
        let (status, body) = open(&m, &m.admin, app, bad).err().unwrap();
        assert_eq!(status, 400, "{bad}: {body}");
        let error = body["error"].as_str().unwrap();
        assert!(error.starts_with("field `after`"), "{bad}: {error}");
    }
    let (status, body) = open(&m, &m.admin, app, "1&after=2").err().unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("`after`"),
        "{body}"
    );
    let (status, _) = open(&m, &m.admin, u64::MAX, "0").err().unwrap();
    assert_eq!(status, 404, "an application id past every stored one");
}

#[test]
fn streams_past_the_per_user_cap_are_429_and_a_closed_one_frees_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[("HETPILOT_LIMITS__MAX_EVENT_STREAMS_PER_USER", "2")],
    );
    // No agent: the application never ends and its streams stay open.
    let app = m.submit(array_app("open", "true", 1));
    let bob = m.create_user("bob");
    let bobs = m
        .http()
        .post("/v1/apps", &bob, &array_app("bobs", "true", 1));
    assert_eq!(bobs.0, 200, "{}", bobs.1);
    let bobs = bobs.1["app"].as_u64().unwrap();
    let first = open(&m, &m.admin, app, "0").unwrap();
    let _second = open(&m, &m.admin, app, "0").unwrap();
    let (status, body) = open(&m, &m.admin, app, "0").err().unwrap();
    assert_eq!(status, 429, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("limits.max_event_streams_per_user"),
        "{body}"
    );
    let _bobs_stream = open(&m, &bob, bobs, "0").expect("the cap is per user");
    drop(first);
    let reopened = poll_until(Duration::from_secs(10), || {
        open(&m, &m.admin, app, "0").ok()
    });
    assert!(reopened.is_some(), "a closed stream's slot is free again");
}

#[test]
fn a_cancelled_applications_waiting_tasks_end_in_the_stream_too() {
    const N: u64 = 5;
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    // No agent: every task is still waiting when the application is cancelled.
    let app = m.submit(array_app("cancelled", "true", N));
    let stream = open(&m, &m.admin, app, "0").unwrap();
    let (status, body) = m
        .http()
        .post(&format!("/v1/apps/{app}/cancel"), &m.admin, &json!({}));
    assert_eq!(status, 200, "{body}");
    let (ends, last) = stream.rest();
    assert_each_task_once(&ends, N);
    for e in &ends {
        assert_eq!(e["state"], "cancelled", "{e}");
        assert_eq!(e["attempt"], 0, "{e}");
        assert!(e["exit_code"].is_null(), "{e}");
    }
    assert_eq!(last["cancelled"], true);
}

#[test]
fn server_sent_events_carry_each_cursor_as_their_id_and_resume_from_last_event_id() {
    const N: u64 = 6;
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let app = m.submit(array_app("sse", "true", N));
    let _agent = m.agent("local", 2, &[]);
    m.wait_finished(app, Duration::from_secs(60));
    let client = reqwest::blocking::Client::new();
    let sse = |last_event_id: Option<&str>| {
        let mut req = client
            .get(format!("{}/v1/apps/{app}/events", m.url))
            .bearer_auth(&m.admin)
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        let resp = req.send().unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        resp.text().unwrap()
    };
    let whole = sse(None);
    let ids: Vec<&str> = whole
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    assert_eq!(ids.len() as u64, N, "{whole}");
    assert_eq!(whole.matches("event: task_end\n").count() as u64, N);
    assert!(
        whole.contains("event: app_end\ndata: {\"type\":\"app_end\","),
        "{whole}"
    );
    // A reconnecting EventSource sends the last id it saw.
    let rest = sse(Some(ids[3]));
    let rest_ids: Vec<&str> = rest
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    assert_eq!(rest_ids, &ids[4..], "{rest}");
}

#[test]
fn a_stream_ends_when_its_token_is_re_issued() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let bob = m.create_user("bob");
    let (status, body) = m
        .http()
        .post("/v1/apps", &bob, &array_app("bobs", "true", 1));
    assert_eq!(status, 200, "{body}");
    let app = body["app"].as_u64().unwrap();
    // No agent: the application never ends; only the new token can end the stream.
    let mut stream = open(&m, &bob, app, "0").unwrap();
    let _new_token = m.create_user("bob");
    assert!(stream.next().is_none(), "the stream closed without an end");
}

#[test]
fn a_hundred_streams_from_one_user_get_the_default_cap_and_429s_and_the_manager_answers_on() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    // No agent: the application never ends and its streams stay open.
    let app = m.submit(array_app("flood", "true", 1));
    let answers: Vec<Result<Stream, (u16, Value)>> =
        (0..100).map(|_| open(&m, &m.admin, app, "0")).collect();
    let open_streams = answers.iter().filter(|a| a.is_ok()).count();
    assert_eq!(
        open_streams, 32,
        "limits.max_event_streams_per_user's default"
    );
    assert!(answers
        .iter()
        .filter_map(|a| a.as_ref().err())
        .all(|(status, _)| *status == 429));
    let (status, _) = m.http().get(&format!("/v1/apps/{app}"), &m.admin);
    assert_eq!(status, 200, "the manager answers other calls");
}

#[test]
fn wait_events_rides_out_a_manager_restart_and_prints_each_end_once() {
    const N: u64 = 8;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut m = Manager::start_on(dir.path(), port, 30.0, &[]);
    let app = m.submit(array_app("restart", "true", N));
    // Started before any agent: it is following the stream when the manager goes.
    let cli = std::process::Command::new(hetpilot_e2e::bin("hetpilot"))
        .args(["wait", &app.to_string(), "--events", "--json"])
        .env_remove("HETPILOT_CONFIG")
        .env("HETPILOT_URL", &m.url)
        .env("HETPILOT_TOKEN", &m.admin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the CLI's stream to open", Duration::from_secs(30), || {
        streams_answered(&m).then_some(())
    });
    m.kill();
    let m = Manager::start_on(dir.path(), port, 30.0, &[]);
    let _agent = m.agent("local", 2, &[]);
    let out = cli.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (last, ends) = lines.split_last().unwrap();
    assert_eq!(last["type"], "app_end", "{lines:?}");
    assert_each_task_once(ends, N);
}

/// Whether the manager answered a stream (200 on the events route, in its metrics).
fn streams_answered(m: &Manager) -> bool {
    let metrics = reqwest::blocking::Client::new()
        .get(format!("{}/metrics", m.url))
        .bearer_auth(&m.admin)
        .send()
        .and_then(|r| r.text())
        .unwrap_or_default();
    metrics.lines().any(|l| {
        l.starts_with("hetpilot_http_requests_total{")
            && l.contains("route=\"/v1/apps/{app}/events\"")
            && l.contains("status=\"200\"")
    })
}
