//! The dashboard in a real browser: headless Chromium, driven through chromedriver
//! (WebDriver, `fantoccini`), logs in with a user's and with the admin token and loads
//! every page against a running manager with real agents on two platforms. Each page must
//! show the numbers the API gives and log no console error (CSP violations, failed
//! requests and script errors all land there). Screenshots go to
//! `target/tmp/dashboard/` (the test's artifacts).
//!
//! Needs `chromium` and `chromium-driver` (Debian; `deploy/lab/start.sh` installs them),
//! hence `#[ignore]`: `deploy/test-all.sh` runs it.

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use hetpilot_e2e::gpu_tasks::{two_gpu_agent_of, UUID_A};
use hetpilot_e2e::{free_port, wait_until, Manager};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::runtime::Runtime;

const LONG: Duration = Duration::from_secs(120);
const PAGES: [&str; 5] = ["apps", "allocation", "platforms", "fairshare", "staging"];

/// chromedriver on a free port, killed on drop.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Tasks of the `held` application spin until this file exists (released on drop), so the
/// state the pages show holds still while they are read.
struct Release(PathBuf);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}

fn start_driver(log: &Path) -> (Driver, String) {
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .arg(format!("--log-path={}", log.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver (Debian package chromium-driver) must be installed");
    let url = format!("http://127.0.0.1:{port}");
    let http = reqwest::blocking::Client::new();
    wait_until("chromedriver to listen", LONG, || {
        let r = http.get(format!("{url}/status")).send().ok()?;
        let v: Value = r.json().ok()?;
        (v["value"]["ready"] == true).then_some(())
    });
    (Driver(child), url)
}

/// The `/session/{id}/se/log` command (chromedriver): the browser's console since the
/// last call.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.into()))
    }
}

struct Browser {
    rt: Runtime,
    client: Client,
    base: String,
    shots: PathBuf,
}

impl Browser {
    fn open(driver: &str, base: &str, profile: &Path, shots: &Path) -> Browser {
        let rt = Runtime::new().unwrap();
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--window-size=1400,1100",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        });
        let caps = caps.as_object().unwrap().clone().into_iter().collect();
        let client = rt
            .block_on(
                ClientBuilder::rustls()
                    .unwrap()
                    .capabilities(caps)
                    .connect(driver),
            )
            .expect("a chromium session");
        std::fs::create_dir_all(shots).unwrap();
        Browser {
            rt,
            client,
            base: base.to_string(),
            shots: shots.to_path_buf(),
        }
    }

    fn login(&self, token: &str) {
        let c = &self.client;
        self.rt.block_on(async {
            c.goto(&format!("{}/ui/", self.base)).await.unwrap();
            let input = c.wait().for_element(Locator::Id("token")).await.unwrap();
            input.send_keys(token).await.unwrap();
            c.find(Locator::Css("#login-form button"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            c.wait()
                .at_most(LONG)
                .for_element(Locator::Css("main[data-page]"))
                .await
                .unwrap();
        });
    }

    fn logout(&self) {
        self.rt.block_on(async {
            let c = &self.client;
            c.find(Locator::Id("logout"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
        });
    }

    /// Opens a page and waits until it has been drawn.
    fn page(&self, name: &str) {
        let c = &self.client;
        self.rt.block_on(async {
            c.goto(&format!("{}/ui/#{name}", self.base)).await.unwrap();
            c.wait()
                .at_most(LONG)
                .for_element(Locator::Css(&format!("main[data-page='{name}']")))
                .await
                .unwrap();
        });
    }

    /// Waits until the element with `data-k="key"` shows `want` (the page redraws every
    /// 2 s).
    fn expect(&self, key: &str, want: &str) {
        let c = &self.client;
        let css = format!("[data-k='{key}']");
        wait_until(&format!("the page to show {key} = {want}"), LONG, || {
            let shown = self.rt.block_on(async {
                match c.find(Locator::Css(&css)).await {
                    Ok(e) => e.text().await.unwrap_or_default(),
                    Err(_) => String::new(),
                }
            });
            (shown.trim() == want).then_some(())
        });
    }

    fn count(&self, css: &str) -> usize {
        self.rt
            .block_on(self.client.find_all(Locator::Css(css)))
            .unwrap()
            .len()
    }

    fn text(&self, css: &str) -> String {
        self.rt.block_on(async {
            let e = self.client.find(Locator::Css(css)).await.unwrap();
            e.text().await.unwrap()
        })
    }

    /// Console entries at SEVERE since the last call.
    fn console_errors(&self) -> Vec<Value> {
        let log = self.rt.block_on(self.client.issue_cmd(BrowserLog)).unwrap();
        log.as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e["level"] == "SEVERE")
            .collect()
    }

    fn screenshot(&self, name: &str) {
        let png = self.rt.block_on(self.client.screenshot()).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }
}

/// Ends the WebDriver session, which quits Chromium (killing chromedriver alone would
/// leave the browser running), also when the test fails.
impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.rt.block_on(self.client.clone().close());
    }
}

fn get(m: &Manager, token: &str, path: &str) -> Value {
    let (s, v) = m.http().get(path, token);
    assert_eq!(s, 200, "{path}: {v}");
    v
}

/// A manager with platforms `fast` and `slow` and quick rounds.
fn start(dir: &Path) -> Manager {
    let config = dir.join("hetpilot.toml");
    std::fs::write(
        &config,
        "[[platforms]]\nname = \"fast\"\n[[platforms]]\nname = \"slow\"\n\
         [scheduler]\ninterval_ms = 100\n",
    )
    .unwrap();
    Manager::start_on(
        dir,
        free_port(),
        30.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    )
}

#[test]
#[ignore = "needs chromium and chromium-driver (deploy/test-all.sh installs them)"]
fn every_dashboard_page_shows_the_api_numbers_without_console_errors() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path());
    let alice = m.create_user("alice");
    // No prefetch: each agent holds only what its slots run, so the held application
    // below fills both platforms.
    let _fast = m.agent("fast", 2, &["--prefetch", "0"]);
    let slow = m.agent("slow", 2, &["--prefetch", "0"]);
    std::fs::write(slow.work_dir.join("slow.marker"), "").unwrap();
    let post = |token: &str, spec: Value| {
        let (s, b) = m.http().post("/v1/apps", token, &spec);
        assert_eq!(s, 200, "{b}");
        b["app"].as_u64().unwrap()
    };
    // Alice's sweep fails every fifth task; the admin's runs slower on `slow`.
    let sweep = post(
        &alice,
        json!({"name": "sweep", "command": "sh -c 'sleep 0.05; exit $(( {} % 5 == 0 ))'",
               "tasks": {"array": {"start": 0, "end": 39}}, "max_attempts": 1}),
    );
    let cpu = post(
        &m.admin,
        json!({"name": "cpu",
               "command": "sh -c 'if [ -e slow.marker ]; then sleep 0.3; else sleep 0.1; fi'",
               "tasks": {"array": {"start": 0, "end": 39}}}),
    );
    // A small workflow: a -> (b, c) -> d, and e -> f.
    let flow = post(
        &alice,
        json!({"name": "flow", "command": "true",
               "tasks": {"lines": ["a", "b", "c", "d", "e", "f"]},
               "dag": {"tasks": [{}, {"parents": [0]}, {"parents": [0]}, {"parents": [1, 2]},
                                 {}, {"parents": [4]}]}}),
    );
    m.wait_finished(sweep, LONG);
    m.wait_finished(cpu, LONG);
    m.wait_finished(flow, LONG);
    // Then an application whose tasks hold every slot until released: a live allocation
    // and running tasks that stand still while the pages are read.
    let release = Release(dir.path().join("release"));
    let held = post(
        &alice,
        json!({"name": "held",
               "command": format!("sh -c 'while [ ! -e {} ]; do sleep 0.05; done'", release.0.display()),
               "tasks": {"array": {"start": 0, "end": 39}}}),
    );
    wait_until("the held tasks to fill every slot", LONG, || {
        let a = get(&m, &m.admin, &format!("/v1/apps/{held}"));
        (a["counts"]["running"] == 4).then_some(())
    });
    let schedule = wait_until("a round that allocated the held application", LONG, || {
        let v = get(&m, &m.admin, "/v1/schedule");
        let row = v["apps"]
            .as_array()?
            .iter()
            .find(|a| a["app"] == held)?
            .clone();
        (row["cores"]
            .as_array()?
            .iter()
            .map(|c| c.as_u64().unwrap_or(0))
            .sum::<u64>()
            > 0)
        .then_some((v, row))
    });

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    let (_driver, driver_url) = start_driver(&dir.path().join("chromedriver.log"));
    let browser = Browser::open(&driver_url, &m.url, &dir.path().join("chromium"), &shots);

    // --- as the admin: every application, every page.
    browser.login(&m.admin);
    let apps = get(&m, &m.admin, "/v1/apps");
    browser.page("apps");
    for a in apps.as_array().unwrap() {
        let id = a["app"].as_u64().unwrap();
        for k in ["done", "failed", "waiting", "cancelled"] {
            browser.expect(&format!("app.{id}.{k}"), &a["counts"][k].to_string());
        }
    }
    browser.expect("apps.count", "4");
    assert_eq!(browser.count("#apps-table tbody tr"), 4);
    // The workflow's row and its DAG: a dot per task, in its state, a line per dependency.
    browser.expect(&format!("wf.{flow}.done"), "6");
    browser.expect(&format!("wf.{flow}.blocked"), "0");
    assert_eq!(browser.count("#dag circle"), 6);
    assert_eq!(browser.count("#dag circle[data-state='done']"), 6);
    assert_eq!(browser.count("#dag line"), 5);
    // The sweep's 8 failures are listed with their reasons.
    assert!(browser.count("#failures tbody tr") >= 5);
    assert!(browser.text("#failures").contains("exit 1"));
    browser.screenshot("admin-apps");

    browser.page("allocation");
    let (sched, row) = schedule;
    for (j, p) in sched["platforms"].as_array().unwrap().iter().enumerate() {
        let p = p["name"].as_str().unwrap();
        browser.expect(&format!("cores.{held}.{p}"), &row["cores"][j].to_string());
    }
    let affinity = get(&m, &m.admin, "/v1/affinity");
    let platforms = affinity["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), 2, "{affinity}");
    let intervals = affinity["ci95"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r.as_array().unwrap());
    assert!(
        intervals.filter(|c| c.is_number()).count() >= 2,
        "{affinity}"
    );
    for (i, a) in affinity["apps"].as_array().unwrap().iter().enumerate() {
        let id = a["app"].as_u64().unwrap();
        for (j, p) in platforms.iter().enumerate() {
            let p = p.as_str().unwrap();
            let n = &affinity["samples"][i][j];
            browser.expect(&format!("samples.{id}.{p}"), &format!("n={n}"));
            let rpa = affinity["reciprocal"][i][j].as_f64().unwrap();
            browser.expect(&format!("rpa.{id}.{p}"), &format!("{rpa:.3}"));
            if let Some(ci) = affinity["ci95"][i][j].as_f64() {
                let want = format!("\u{b1}{:.0}%", 100.0 * ci);
                browser.expect(&format!("ci.throughput.{id}.{p}"), &want);
            }
        }
    }
    let fairness = match affinity["fairness"].as_f64() {
        Some(f) => format!("{f:.3}"),
        None => "-".into(),
    };
    browser.expect("fairness", &fairness);
    browser.screenshot("admin-allocation");

    browser.page("platforms");
    for a in get(&m, &m.admin, "/v1/agents").as_array().unwrap() {
        let id = a["agent"].as_u64().unwrap();
        browser.expect(&format!("agent.{id}.slots"), &a["slots"].to_string());
        browser.expect(&format!("agent.{id}.held"), &a["tasks_held"].to_string());
        // Every slot runs the held application: it is each node's only co-runner.
        assert_eq!(a["apps"], json!([held]), "{a}");
        browser.expect(&format!("agent.{id}.apps"), &format!("{held} held"));
        browser.expect(&format!("agent.{id}.state"), a["state"].as_str().unwrap());
    }
    browser.screenshot("admin-platforms");

    browser.page("fairshare");
    for u in get(&m, &m.admin, "/v1/usage").as_array().unwrap() {
        let user = u["user"].as_str().unwrap();
        let usage = u["usage"].as_f64().unwrap();
        browser.expect(&format!("usage.{user}.usage"), &format!("{usage:.2}"));
    }
    browser.screenshot("admin-fairshare");

    browser.page("staging");
    assert_eq!(get(&m, &m.admin, "/v1/staging"), json!([]));
    assert!(browser.text("main").contains("No task has staged files"));
    browser.screenshot("admin-staging");
    let errors = browser.console_errors();
    assert!(errors.is_empty(), "console errors as admin: {errors:?}");

    // --- as alice: her applications only, and no admin-only request.
    browser.logout();
    browser.login(&alice);
    browser.page("apps");
    let hers = get(&m, &alice, "/v1/apps");
    assert_eq!(hers.as_array().unwrap().len(), 3);
    browser.expect("apps.count", "3");
    let h = get(&m, &alice, &format!("/v1/apps/{held}"));
    for state in ["leased", "running"] {
        let n = h["counts"][state].as_u64().unwrap();
        browser.expect(&format!("app.{held}.{state}"), &n.to_string());
    }
    assert_eq!(
        browser.count(&format!("tr[data-app='{cpu}']")),
        0,
        "the admin's app is hidden"
    );
    for page in PAGES {
        browser.page(page);
        browser.screenshot(&format!("user-{page}"));
    }
    assert!(browser.text("main").contains("No task has staged files"));
    browser.page("platforms");
    assert!(browser.text("main").contains("shown to admins"));
    let errors = browser.console_errors();
    assert!(errors.is_empty(), "console errors as a user: {errors:?}");
    // The token is in no URL the browser visited.
    let url = browser.rt.block_on(browser.client.current_url()).unwrap();
    assert!(!url.as_str().contains(&alice), "{url}");
    for page in PAGES {
        assert!(shots.join(format!("user-{page}.png")).exists());
    }
    eprintln!("screenshots in {}", shots.display());
    drop(release);
    m.wait_finished(held, LONG);
}

/// How the page's script writes a JSON number (`String(value)`): `1`, not `1.0`.
fn js_number(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        Some(f) => f.to_string(),
        None => v.to_string(),
    }
}

/// The platforms page of an agent with two (fake) GPUs, one held whole and one half-held
/// by running tasks: each device's model, memory, share in use and runs, as the API gives
/// them, and no console error.
#[test]
#[ignore = "needs chromium and chromium-driver (deploy/test-all.sh installs them)"]
fn the_platforms_page_shows_a_gpu_agents_devices_and_their_use() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path());
    let mut agent = two_gpu_agent_of(&m, "fast", dir.path());
    let gpu_agent = wait_until("the agent to offer its two GPUs", LONG, || {
        let agents = get(&m, &m.admin, "/v1/agents");
        agents.as_array()?.iter().find_map(|a| {
            (a["gpus"].as_array().map(Vec::len) == Some(2)).then(|| a["agent"].as_u64())?
        })
    });
    let release = Release(dir.path().join("release"));
    let hold = format!(
        "sh -c 'while [ ! -e {} ]; do sleep 0.05; done'",
        release.0.display()
    );
    let post = |spec: Value| {
        let (s, b) = m.http().post("/v1/apps", &m.admin, &spec);
        assert_eq!(s, 200, "{b}");
        b["app"].as_u64().unwrap()
    };
    let whole = post(json!({"name": "whole", "command": hold, "gpus": 1,
                            "tasks": {"array": {"start": 0, "end": 0}}}));
    let half = post(json!({"name": "half", "command": hold, "gpus": 0.5,
                           "tasks": {"array": {"start": 0, "end": 0}}}));
    let gpus = wait_until("one GPU held whole and one by half", LONG, || {
        let agents = get(&m, &m.admin, "/v1/agents");
        let a = agents
            .as_array()?
            .iter()
            .find(|a| a["agent"] == gpu_agent)?
            .clone();
        let mut shares: Vec<f64> = a["gpus"]
            .as_array()?
            .iter()
            .filter_map(|g| g["in_use"].as_f64())
            .collect();
        shares.sort_by(f64::total_cmp);
        (shares == [0.5, 1.0]).then_some(a["gpus"].clone())
    });

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    let (_driver, driver_url) = start_driver(&dir.path().join("chromedriver.log"));
    let browser = Browser::open(&driver_url, &m.url, &dir.path().join("chromium"), &shots);
    browser.login(&m.admin);
    browser.page("platforms");
    for g in gpus.as_array().unwrap() {
        let key = |what: &str| format!("gpu.{gpu_agent}.{}.{what}", g["index"]);
        browser.expect(&key("model"), g["model"].as_str().unwrap());
        browser.expect(&key("memory"), &js_number(&g["memory_mib"]));
        browser.expect(&key("in_use"), &js_number(&g["in_use"]));
        browser.expect(&key("tasks"), &js_number(&g["tasks"]));
    }
    assert_eq!(browser.count("#gpus-table tbody tr"), 2);
    assert!(browser.text("main").contains(UUID_A));
    browser.screenshot("admin-platforms-gpus");
    let errors = browser.console_errors();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    drop(release);
    m.wait_finished(whole, LONG);
    m.wait_finished(half, LONG);
    let _ = agent.kill();
    let _ = agent.wait();
}

/// The platforms page draws a parallel run's group lease: the run, its head and the agent
/// that keeps slots for it, with their hosts and slots, as the agents listing gives them.
#[test]
#[ignore = "needs chromium and chromium-driver (deploy/test-all.sh installs them)"]
fn the_platforms_page_draws_a_parallel_runs_group_lease() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path());
    let _a = m.agent_on_node("fast", 2, "nodeA");
    let _b = m.agent_on_node("fast", 2, "nodeB");
    wait_until("both agents to register", LONG, || {
        let agents = get(&m, &m.admin, "/v1/agents");
        (agents.as_array()?.len() == 2).then_some(())
    });
    let release = Release(dir.path().join("release"));
    let hold = format!(
        "sh -c 'while [ ! -e {} ]; do sleep 0.05; done'",
        release.0.display()
    );
    let (s, b) = m.http().post(
        "/v1/apps",
        &m.admin,
        &json!({"name": "mpi", "command": hold, "procs": 4,
                "tasks": {"array": {"start": 0, "end": 0}}}),
    );
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    let group = wait_until("the run's group lease", LONG, || {
        let agents = get(&m, &m.admin, "/v1/agents");
        agents
            .as_array()?
            .iter()
            .find_map(|a| a["group_leases"].get(0).cloned())
    });
    let cell = |m: &Value| {
        format!(
            "{} ({}: {})",
            m["agent"],
            m["host"].as_str().unwrap(),
            m["slots"]
        )
    };
    let members = group["members"].as_array().unwrap();
    assert_eq!(members.len(), 2, "{group}");

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    let (_driver, driver_url) = start_driver(&dir.path().join("chromedriver.log"));
    let browser = Browser::open(&driver_url, &m.url, &dir.path().join("chromium"), &shots);
    browser.login(&m.admin);
    browser.page("platforms");
    let key = format!("group.{app}.0");
    browser.expect(&format!("{key}.head"), &cell(&members[0]));
    browser.expect(&format!("{key}.members"), &cell(&members[1]));
    browser.expect(&format!("{key}.slots"), "4");
    assert_eq!(browser.count("#groups-table tbody tr"), 1);
    let mut hosts = [
        members[0]["host"].as_str().unwrap(),
        members[1]["host"].as_str().unwrap(),
    ];
    hosts.sort();
    assert_eq!(hosts, ["nodeA", "nodeB"]);
    browser.screenshot("admin-platforms-groups");
    let errors = browser.console_errors();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    drop(release);
    m.wait_finished(app, LONG);
}
