//! `GET /metrics`, the dashboard's routes and views, `hetpilot affinity --live`,
//! `hetpilot schedule --watch` and JSON logs, against a real manager and real agents.

use hetpilot_e2e::{bin, free_port, wait_until, Manager};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);
const METRICS_TOKEN: &str = "hpm_0123456789abcdef0123456789abcdef";

/// A manager with platforms `fast` and `slow`, quick rounds and a metrics token.
fn start(dir: &Path, flags: &[&str], env: &[(&str, &str)]) -> Manager {
    let token_file = dir.join("metrics.token");
    std::fs::write(&token_file, format!("{METRICS_TOKEN}\n")).unwrap();
    let config = dir.join("hetpilot.toml");
    std::fs::write(
        &config,
        format!(
            "[[platforms]]\nname = \"fast\"\n[[platforms]]\nname = \"slow\"\n\
             [scheduler]\ninterval_ms = 100\n[metrics]\ntoken_file = \"{}\"\n\
             history_interval_ms = 100\n",
            token_file.display()
        ),
    )
    .unwrap();
    let mut env = env.to_vec();
    env.push(("HETPILOT_CONFIG", config.to_str().unwrap()));
    Manager::start_with(dir, free_port(), 30.0, flags, &env)
}

/// 20 tasks, every fifth failing, one attempt each.
fn mixed_app() -> Value {
    json!({
        "name": "mixed",
        "command": "sh -c 'exit $(( {} % 5 == 0 ))'",
        "tasks": {"array": {"start": 0, "end": 19}},
        "max_attempts": 1,
    })
}

fn submit_as(m: &Manager, token: &str, spec: &Value) -> u64 {
    let (s, b) = m.http().post("/v1/apps", token, spec);
    assert_eq!(s, 200, "{b}");
    b["app"].as_u64().unwrap()
}

/// The sum of the samples of `name` whose labels include every pair of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
            (metric == name).then_some(())?;
            let all = labels
                .iter()
                .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
            all.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

fn scrape(m: &Manager, token: &str) -> (u16, String, String) {
    let resp = reqwest::blocking::Client::new()
        .get(format!("{}/metrics", m.url))
        .bearer_auth(token)
        .send()
        .unwrap();
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, ctype, resp.text().unwrap())
}

#[test]
fn metrics_count_what_ran_and_open_only_to_the_admin_and_metrics_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), &[], &[]);
    let alice = m.create_user("alice");
    let _fast = m.agent("fast", 2, &[]);
    let _slow = m.agent("slow", 2, &[]);
    let app = submit_as(&m, &alice, &mixed_app());
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], 16, "{summary}");
    assert_eq!(summary["counts"]["failed"], 4, "{summary}");

    // Who may read it.
    assert_eq!(scrape(&m, "").0, 401);
    assert_eq!(scrape(&m, "hpu_not-a-token").0, 401);
    assert_eq!(scrape(&m, &alice).0, 403, "a user token is not enough");
    let (status, ctype, by_token) = scrape(&m, METRICS_TOKEN);
    assert_eq!(status, 200, "{by_token}");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert!(by_token.ends_with("# EOF\n"));
    let (s, _) = m.http().get("/v1/apps", METRICS_TOKEN);
    assert_eq!(s, 401, "the metrics token opens nothing but /metrics");
    let (status, _, text) = scrape(&m, &m.admin);
    assert_eq!(status, 200);

    // What ran, as the API says it.
    let done = |k: &str| sample(&text, "hetpilot_tasks_completed_total", &[("outcome", k)]);
    assert_eq!(done("success"), 16.0, "{text}");
    assert_eq!(done("failed"), 4.0);
    assert_eq!(sample(&text, "hetpilot_tasks_leased_total", &[]), 20.0);
    assert_eq!(sample(&text, "hetpilot_task_wall_seconds_count", &[]), 20.0);
    let user = |state: &str| {
        sample(
            &text,
            "hetpilot_user_tasks",
            &[("user", "alice"), ("state", state)],
        )
    };
    assert_eq!(
        (user("done"), user("failed"), user("waiting")),
        (16.0, 4.0, 0.0)
    );
    for platform in ["fast", "slow"] {
        let p = [("platform", platform)];
        assert_eq!(sample(&text, "hetpilot_agent_slots", &p), 2.0, "{text}");
        let active = [("platform", platform), ("state", "active")];
        assert_eq!(sample(&text, "hetpilot_agents", &active), 1.0);
    }
    let results = [("route", "/v1/agents/{agent}/results"), ("status", "200")];
    assert!(sample(&text, "hetpilot_http_requests_total", &results) >= 1.0);
    assert!(sample(&text, "hetpilot_store_commit_seconds_count", &[]) >= 1.0);
    let planned = |planner| {
        sample(
            &text,
            "hetpilot_planning_seconds_count",
            &[("planner", planner)],
        )
    };
    assert!(planned("round") >= 1.0, "{text}");
    // Each round's steps are timed apart; every round ends both.
    assert!(planned("two-level") >= planned("round"), "{text}");
    assert!(planned("tlpa") >= planned("round"), "{text}");
    assert!(sample(&text, "hetpilot_fairshare_usage", &[("user", "alice")]) > 0.0);
    names_are_documented(&text);
    // Bounded labels: routes are patterns, never paths with ids; no task label at all.
    assert!(!text.contains("task=\""), "{text}");
    assert!(!text.contains("/v1/agents/1/"), "{text}");

    // The affinity view rests on the same runs: 16 successes measured.
    let (s, v) = m.http().get("/v1/affinity", &m.admin);
    assert_eq!(s, 200, "{v}");
    let row = v["apps"]
        .as_array()
        .unwrap()
        .iter()
        .position(|a| a["app"] == app)
        .expect("the application has a row");
    let samples: u64 = v["samples"][row]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(samples, 16, "{v}");
    assert_eq!(v["platforms"], json!(["fast", "slow"]));
    // A user sees only their own rows.
    let bob = m.create_user("bob");
    let (_, theirs) = m.http().get("/v1/affinity", &bob);
    assert_eq!(theirs["apps"], json!([]), "{theirs}");
    let (_, who) = m.http().get("/v1/whoami", &bob);
    assert_eq!(who, json!({"user": "bob", "admin": false}));
    let (s, _) = m.http().get("/v1/whoami", METRICS_TOKEN);
    assert_eq!(s, 401);
}

#[test]
fn the_dashboard_assets_hold_no_data_and_forbid_foreign_code() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), &[], &[]);
    let client = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let get = |path: &str| client.get(format!("{}{path}", m.url)).send().unwrap();
    let r = get("/ui");
    assert_eq!(r.status().as_u16(), 308);
    assert_eq!(r.headers()["location"], "/ui/");
    let r = get("/ui/");
    assert_eq!(r.status().as_u16(), 200);
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    let html = r.text().unwrap();
    assert!(html.contains("<script src=\"app.js\"></script>"), "{html}");
    assert!(!html.contains(&m.admin));
    for (path, ctype) in [
        ("/ui/app.js", "text/javascript"),
        ("/ui/style.css", "text/css"),
    ] {
        let r = get(path);
        assert_eq!(r.status().as_u16(), 200, "{path}");
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with(ctype));
        // Nothing is fetched from elsewhere: the assets name no other origin (the SVG
        // namespace is a name, not a fetch).
        let text = r.text().unwrap().replace("http://www.w3.org/2000/svg", "");
        assert!(!text.contains("http"), "{path} names another origin");
    }
    // The data stays behind the API's tokens.
    assert_eq!(get("/v1/affinity").status().as_u16(), 401);
    assert_eq!(get("/v1/staging").status().as_u16(), 401);
}

#[test]
fn cli_shows_live_affinity_and_watches_the_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), &[], &[]);
    let _fast = m.agent("fast", 2, &[]);
    let _slow = m.agent("slow", 2, &[]);
    let app = m.submit(mixed_app());
    m.wait_finished(app, LONG);
    let out = m.cli(&["affinity", "--live"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Table 3: platform affinity"), "{text}");
    assert!(text.contains("Table 4: co-runner affinity"), "{text}");
    // The sample counts of the application's row add up to its successes.
    let counts = text
        .split("Successful runs measured")
        .nth(1)
        .expect("a samples table");
    let row = counts
        .lines()
        .find(|l| l.starts_with(&format!("{app} mixed")))
        .unwrap_or_else(|| panic!("no row for the application in {text}"));
    let total: u64 = row
        .split_whitespace()
        .skip(2)
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 16, "{text}");
    let out = m.cli(&["affinity", "--live", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["platforms"], json!(["fast", "slow"]));

    // --watch draws until Ctrl-C, then ends cleanly.
    let mut watch = Command::new(bin("hetpilot"))
        .args(["schedule", "--watch", "--interval-secs", "0.2"])
        .env_remove("HETPILOT_CONFIG")
        .env("HETPILOT_URL", &m.url)
        .env("HETPILOT_TOKEN", &m.admin)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut draws = 0;
    while draws < 3 {
        let line = lines.next().expect("more output").unwrap();
        if line.starts_with("-- ") {
            draws += 1;
        } else if draws > 0 && line.starts_with("policy") {
            assert!(line.contains("platforms: fast"), "{line}");
        }
    }
    hetpilot_e2e::signal(&watch, libc::SIGINT);
    let status = wait_until("the watch to end", LONG, || watch.try_wait().unwrap());
    assert!(status.success(), "{status:?}");
    let out = m.cli(&["schedule", "--watch", "--interval-secs", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("between 0.2 and 3600"));
}

/// JSON lines of a log file, skipping any that are not JSON.
fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn json_logs_carry_agent_application_and_task_ids() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(
        dir.path(),
        &["--log-format", "json"],
        &[("RUST_LOG", "hetpilot=debug")],
    );
    let work = dir.path().join("agent");
    std::fs::create_dir_all(&work).unwrap();
    let agent_log = dir.path().join("agent.log");
    let mut agent = Command::new(bin("hetpilot-agent"))
        .args(["--manager", &m.url, "--platform", "fast", "--slots", "2"])
        .args(["--log-format", "json"])
        .arg("--work-dir")
        .arg(&work)
        .env("HETPILOT_AGENT_TOKEN", m.agent_token("fast"))
        .env("RUST_LOG", "hetpilot_agent=debug")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&agent_log).unwrap())
        .spawn()
        .unwrap();
    let app = m.submit(json!({
        "name": "logged",
        "command": "sh -c 'exit {}'",
        "tasks": {"array": {"start": 0, "end": 1}},
        "max_attempts": 1,
    }));
    m.wait_finished(app, LONG);
    let leased = wait_until("a leased task in the manager's log", LONG, || {
        json_lines(&m.dir.join("manager.log"))
            .into_iter()
            .find(|l| l["fields"]["message"] == "leased")
    });
    assert_eq!(leased["fields"]["app"], app.to_string(), "{leased}");
    assert!(
        leased["fields"]["task"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{app}")),
        "{leased}"
    );
    assert_eq!(leased["span"]["name"], "lease", "{leased}");
    assert_eq!(leased["span"]["agent"], "1", "{leased}");
    let manager_log = json_lines(&m.dir.join("manager.log"));
    assert!(
        manager_log
            .iter()
            .any(|l| l["fields"]["message"] == "reported" && l["span"]["name"] == "report"),
        "no reported result in a report span"
    );
    // The agent: every line is JSON; lines logged during a run carry the run's ids under
    // the agent's span.
    let _ = agent.kill();
    let _ = agent.wait();
    let text = std::fs::read_to_string(&agent_log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let in_run = lines
        .iter()
        .find(|l| l["span"]["name"] == "run")
        .unwrap_or_else(|| panic!("no line logged in a run span: {text}"));
    assert_eq!(in_run["span"]["app"], app.to_string(), "{in_run}");
    let spans = in_run["spans"].as_array().unwrap();
    assert!(
        spans
            .iter()
            .any(|s| s["name"] == "agent" && s["agent"] == "1"),
        "{in_run}"
    );
}

/// A sample's metric name without its histogram suffix.
fn family(name: &str) -> &str {
    ["_bucket", "_sum", "_count", "_created"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name)
}

/// The user guide's page with the table of every metric.
const METRICS_GUIDE: &str = "docs/guide/metrics-dashboard.md";

/// Every metric the manager exposes, and every metric the Grafana dashboard queries, is
/// in the user guide's table of metrics (and the dashboard queries only those).
fn names_are_documented(exposition: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let guide = std::fs::read_to_string(root.join(METRICS_GUIDE)).unwrap();
    let documented: Vec<&str> = guide
        .lines()
        .filter_map(|l| l.strip_prefix("| `hetpilot_"))
        .filter_map(|l| l.split_once('`'))
        .map(|(rest, _)| rest)
        .collect();
    assert!(documented.len() >= 20, "{documented:?}");
    let is_documented = |name: &str| {
        name.strip_prefix("hetpilot_")
            .is_some_and(|n| documented.contains(&family(n)))
    };
    for line in exposition.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap();
        assert!(
            is_documented(name),
            "{name} is not in the table of {METRICS_GUIDE}"
        );
    }
    let grafana =
        std::fs::read_to_string(root.join("deploy/grafana/hetpilot-dashboard.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&grafana).unwrap();
    let mut queried = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for (i, _) in expr.match_indices("hetpilot_") {
                let name: String = expr[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(is_documented(&name), "the dashboard queries unknown {name}");
                queried += 1;
            }
        }
    }
    assert!(queried >= 20, "{queried}");
}

#[test]
#[ignore = "runs the whole demo: a minute or more in a debug build (deploy/test-all.sh runs it)"]
fn demo_keep_serves_the_dashboard_and_metrics_until_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("demo");
    let mut demo = Command::new(bin("hetpilot"))
        .args(["demo", "--keep", "--data-dir"])
        .arg(&data)
        .env_remove("HETPILOT_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(demo.stdout.take().unwrap()).lines();
    let mut next = || lines.next().expect("more demo output").unwrap();
    let first = next();
    let url = first
        .strip_prefix("hetpilot demo: manager on ")
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    let dashboard = next();
    assert!(dashboard.contains(&format!("{url}/ui/")), "{dashboard}");
    assert!(dashboard.contains("admin.token"), "{dashboard}");
    // The report, then the manager stays up.
    loop {
        let line = next();
        if line.contains("the manager stays up") {
            break;
        }
    }
    let admin = std::fs::read_to_string(data.join("admin.token")).unwrap();
    let http = reqwest::blocking::Client::new();
    let ui = http.get(format!("{url}/ui/")).send().unwrap();
    assert_eq!(ui.status().as_u16(), 200);
    let text = http
        .get(format!("{url}/metrics"))
        .bearer_auth(admin.trim())
        .send()
        .unwrap()
        .text()
        .unwrap();
    let apps: Value = http
        .get(format!("{url}/v1/apps"))
        .bearer_auth(admin.trim())
        .send()
        .unwrap()
        .json()
        .unwrap();
    let done: u64 = apps
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["counts"]["done"].as_u64().unwrap())
        .sum();
    assert!(done > 0);
    let ok = sample(
        &text,
        "hetpilot_tasks_completed_total",
        &[("outcome", "success")],
    );
    assert_eq!(ok, done as f64, "{text}");
    for platform in ["dedicated", "shared"] {
        let active = [("platform", platform), ("state", "active")];
        assert_eq!(sample(&text, "hetpilot_agents", &active), 1.0, "{text}");
    }
    hetpilot_e2e::signal(&demo, libc::SIGINT);
    let status = wait_until("the demo to end", LONG, || demo.try_wait().unwrap());
    assert!(status.success(), "{status:?}");
}

/// Tasks that end only once `gate` exists, and `quick` that end at once.
fn gated_app(name: &str, gate: &Path, quick: u64, gated: u64) -> Value {
    json!({
        "name": name,
        "command": format!(
            "sh -c 'if [ {{}} -ge {quick} ]; then while [ ! -e {} ]; do sleep 0.05; done; fi'",
            gate.display()
        ),
        "tasks": {"array": {"start": 0, "end": quick + gated - 1}},
    })
}

#[test]
fn the_history_keeps_each_users_progress_and_hides_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let m = start(dir.path(), &[], &[]);
    let alice = m.create_user("alice");
    let _agent = m.agent("fast", 4, &[]);
    let mine = submit_as(&m, &alice, &gated_app("mine", &gate, 3, 1));
    let admins = submit_as(&m, &m.admin, &gated_app("admins", &gate, 1, 1));
    let ended = |sample: &Value, app: u64| {
        sample["apps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["app"] == app)
            .map(|a| a["ended"].as_u64().unwrap())
    };
    // The quick tasks end and a later sample counts them; the gated ones keep both running.
    let seen = wait_until("a sample with the quick tasks ended", LONG, || {
        let (s, h) = m.http().get("/v1/history", &m.admin);
        assert_eq!(s, 200, "{h}");
        let last = h["samples"].as_array()?.last()?.clone();
        (ended(&last, mine) == Some(3) && ended(&last, admins) == Some(1)).then_some(h)
    });
    assert_eq!(seen["interval_ms"], 100, "{seen}");
    let (s, hers) = m.http().get("/v1/history", &alice);
    assert_eq!(s, 200, "{hers}");
    let samples = hers["samples"].as_array().unwrap();
    assert!(samples.len() >= 2, "{hers}");
    assert!(samples.iter().all(|x| ended(x, admins).is_none()), "{hers}");
    assert!(samples.iter().any(|x| ended(x, mine) == Some(3)), "{hers}");
    // Counts only grow, oldest sample first.
    let counts: Vec<u64> = samples.iter().filter_map(|x| ended(x, mine)).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    let times: Vec<u64> = samples
        .iter()
        .map(|x| x["at_ms"].as_u64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    // Agents are not users.
    let token = m.agent_token("fast");
    assert_ne!(m.http().get("/v1/history", &token).0, 200);
    std::fs::write(&gate, b"").unwrap();
}
