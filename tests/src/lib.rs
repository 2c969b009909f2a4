//! Harness for the end-to-end tests: starts real `hetpilot serve` and `hetpilot-agent`
//! processes (pilots and depots) on 127.0.0.1, talks to them over HTTP, and reads
//! the manager's SQLite file. Waiting is always on a condition with a deadline, never a bare sleep.

pub mod chaos;
pub mod gpu_tasks;
pub mod lab;
pub mod pilots;
pub mod proc_stats;
pub mod tmpfs;

use reqwest::blocking::Client;
use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The directory holding the workspace's binaries (this test binary's profile directory).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf();
    for b in ["hetpilot", "hetpilot-agent", "hetpilot-research"] {
        assert!(
            dir.join(b).exists(),
            "{} missing: run `cargo build --workspace --bins` first",
            dir.join(b).display()
        );
    }
    dir
}

pub fn bin(name: &str) -> PathBuf {
    bin_dir().join(name)
}

/// Polls `f` every 20 ms until it returns Some, or panics after `timeout` naming `what`.
pub fn wait_until<T>(what: &str, timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
    poll_until(timeout, f)
        .unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}"))
}

/// Polls `f` every 20 ms until it returns Some; `None` once `timeout` has passed.
pub fn poll_until<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills a process with a signal.
pub fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

pub struct Manager {
    pub child: Child,
    pub dir: PathBuf,
    pub url: String,
    pub port: u16,
    pub admin: String,
}

impl Manager {
    /// Starts a manager on a fresh port with its data in `dir`.
    pub fn start(dir: &Path, lease_timeout_secs: f64) -> Manager {
        Manager::start_on(dir, free_port(), lease_timeout_secs, &[])
    }

    /// Starts a manager serving HTTPS with a self-signed certificate (`--tls self-signed`)
    /// on a fresh port; `http()`, `cli()` and `agent()` trust its certificate.
    pub fn start_tls(dir: &Path, lease_timeout_secs: f64) -> Manager {
        let m = Manager::start_with(
            dir,
            free_port(),
            lease_timeout_secs,
            &["--tls", "self-signed"],
            &[],
        );
        assert!(m.url.starts_with("https://"), "{}", m.url);
        m
    }

    /// Starts a manager on `port` (to restart one where its agents expect it).
    pub fn start_on(
        dir: &Path,
        port: u16,
        lease_timeout_secs: f64,
        env: &[(&str, &str)],
    ) -> Manager {
        Manager::start_with(dir, port, lease_timeout_secs, &[], env)
    }

    /// Starts a manager on `port` with extra `hetpilot serve` flags (e.g. `--tls self-signed`)
    /// and environment (`RUST_LOG` is `info` unless `env` says otherwise); its stderr goes to
    /// `manager.log` in `dir`.
    pub fn start_with(
        dir: &Path,
        port: u16,
        lease_timeout_secs: f64,
        flags: &[&str],
        env: &[(&str, &str)],
    ) -> Manager {
        Manager::start_program(&bin("hetpilot"), dir, port, lease_timeout_secs, flags, env)
    }

    /// [`Manager::start_with`] with the manager binary `program` (another build's).
    pub fn start_program(
        program: &Path,
        dir: &Path,
        port: u16,
        lease_timeout_secs: f64,
        flags: &[&str],
        env: &[(&str, &str)],
    ) -> Manager {
        let url_file = dir.join("manager.url");
        let _ = std::fs::remove_file(&url_file);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("manager.log"))
            .unwrap();
        let child = Command::new(program)
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--lease-timeout-secs",
            ])
            .arg(lease_timeout_secs.to_string())
            .arg("--data-dir")
            .arg(dir)
            .args(flags)
            // A shell that sourced the lab's env.sh names the lab's configuration: only
            // `env` may name one for a test's manager.
            .env_remove("HETPILOT_CONFIG")
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting hetpilot serve");
        let url = wait_until("the manager to listen", Duration::from_secs(30), || {
            std::fs::read_to_string(&url_file)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        });
        let admin = std::fs::read_to_string(dir.join("admin.token"))
            .unwrap()
            .trim()
            .to_string();
        Manager {
            child,
            dir: dir.to_path_buf(),
            url,
            port,
            admin,
        }
    }

    /// Raw HTTP calls; over HTTPS (`--tls self-signed`) trusting the manager's certificate.
    pub fn http(&self) -> Http {
        if let Some(ca) = self.ca_file() {
            return self.https(&ca);
        }
        Http {
            client: Client::new(),
            base: self.url.clone(),
        }
    }

    /// The self-signed certificate of a manager serving HTTPS, which clients trust.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.url
            .starts_with("https://")
            .then(|| self.dir.join("tls-cert.pem"))
    }

    /// Raw HTTPS calls trusting only the PEM certificate `ca`.
    pub fn https(&self, ca: &Path) -> Http {
        let pem = std::fs::read(ca).expect("reading the CA file");
        let certs = reqwest::Certificate::from_pem_bundle(&pem).expect("a PEM certificate");
        Http {
            client: Client::builder().tls_certs_only(certs).build().unwrap(),
            base: self.url.clone(),
        }
    }

    /// A registration token for `platform`.
    pub fn agent_token(&self, platform: &str) -> String {
        let (status, body) = self.http().post(
            "/v1/agent-tokens",
            &self.admin,
            &serde_json::json!({"platform": platform}),
        );
        assert_eq!(status, 200, "{body}");
        body["token"].as_str().unwrap().to_string()
    }

    /// Starts an agent of `platform` with `slots` slots.
    pub fn agent(&self, platform: &str, slots: u32, extra: &[&str]) -> Agent {
        let token = self.agent_token(platform);
        let ca = self.ca_file().map(|f| f.display().to_string());
        let mut flags: Vec<&str> = extra.to_vec();
        if let Some(ca) = &ca {
            flags.extend(["--ca-file", ca]);
        }
        Agent::start(
            &self.url,
            platform,
            &token,
            slots,
            &self.dir.join(format!("agent-{}", free_port())),
            &flags,
        )
    }

    /// Starts an agent of `platform` with `slots` slots that registers as node `node`
    /// (Slurm's node name, `SLURMD_NODENAME`, which agents prefer to the host name).
    pub fn agent_on_node(&self, platform: &str, slots: u32, node: &str) -> Agent {
        let token = self.agent_token(platform);
        Agent::start_env(
            &self.url,
            platform,
            &token,
            slots,
            &self.dir.join(format!("agent-{}", free_port())),
            &[],
            &[("SLURMD_NODENAME", node)],
        )
    }

    /// Runs the `hetpilot` CLI against this manager as admin.
    pub fn cli(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(bin("hetpilot"));
        if let Some(ca) = self.ca_file() {
            cmd.env("HETPILOT_CA_FILE", ca);
        }
        cmd.args(args)
            .env_remove("HETPILOT_CONFIG")
            .env("HETPILOT_URL", &self.url)
            .env("HETPILOT_TOKEN", &self.admin)
            .output()
            .expect("running the hetpilot CLI")
    }

    /// Milliseconds of one `hetpilot submit --wait --array 0-0 -- /bin/true`, the whole CLI
    /// process, as admin (the one-task latency the benchmarks measure).
    pub fn one_task_submit_wait_ms(&self) -> f64 {
        let t = std::time::Instant::now();
        let out = self.cli(&["submit", "--wait", "--array", "0-0", "--", "/bin/true"]);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        assert!(out.status.success(), "{out:?}");
        ms
    }

    /// The manager's database, read-only.
    pub fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open_with_flags(
            self.dir.join("hetpilot.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap()
    }

    /// Creates user `name` as admin; returns their token.
    pub fn create_user(&self, name: &str) -> String {
        let (s, b) = self.http().post(
            "/v1/users",
            &self.admin,
            &serde_json::json!({ "name": name }),
        );
        assert_eq!(s, 200, "{b}");
        b["token"].as_str().unwrap().to_string()
    }

    /// Submits an application as admin; returns its id.
    pub fn submit(&self, spec: Value) -> u64 {
        let (status, body) = self.http().post("/v1/apps", &self.admin, &spec);
        assert_eq!(status, 200, "submit failed: {body}");
        body["app"].as_u64().unwrap()
    }

    /// Waits until every task of `app` has ended, in memory and in the store (which may
    /// trail by a group commit: listings and run records are read from it); returns the
    /// summary.
    pub fn wait_finished(&self, app: u64, timeout: Duration) -> Value {
        let http = self.http();
        let summary = wait_until(&format!("application {app} to finish"), timeout, || {
            let (status, s) = http.get(&format!("/v1/apps/{app}"), &self.admin);
            let c = &s["counts"];
            let n = |k: &str| c[k].as_u64().unwrap_or(0);
            let finished = n("done") + n("failed") + n("cancelled");
            let total = finished + n("waiting") + n("leased") + n("running");
            (status == 200 && total > 0 && finished == total).then_some(s)
        });
        // Task states are stored as fixed codes: waiting, leased and running are 0, 1 and 2.
        wait_until(
            &format!("application {app}'s end to be stored"),
            timeout,
            || {
                let open: i64 = self
                    .db()
                    .query_row(
                        "SELECT COUNT(*) FROM tasks WHERE app_id = ?1 AND state IN (0, 1, 2)",
                        [app as i64],
                        |r| r.get(0),
                    )
                    .ok()?;
                (open == 0).then_some(())
            },
        );
        summary
    }

    pub fn kill(&mut self) {
        signal(&self.child, libc::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for Manager {
    /// Kills the manager, then stops the pilots it recorded, so none outlives the test
    /// (also when the test failed).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            print_log_tail("manager", &self.dir.join("manager.log"));
        }
        pilots::stop_recorded(&self.dir);
    }
}

/// Prints the last lines of `path` to stderr, so a failed test shows what its process
/// logged before the temporary directory holding the log is removed.
pub fn print_log_tail(what: &str, path: &Path) {
    const LINES: usize = 300;
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(LINES);
    eprintln!(
        "---- last {} lines of the {what}'s log ({}) ----",
        lines.len() - from,
        path.display()
    );
    for line in &lines[from..] {
        eprintln!("{line}");
    }
}

pub struct Agent {
    pub child: Child,
    pub work_dir: PathBuf,
}

impl Agent {
    pub fn start(
        url: &str,
        platform: &str,
        token: &str,
        slots: u32,
        work_dir: &Path,
        extra: &[&str],
    ) -> Agent {
        Agent::start_env(url, platform, token, slots, work_dir, extra, &[])
    }

    /// [`Agent::start`] with extra environment variables.
    pub fn start_env(
        url: &str,
        platform: &str,
        token: &str,
        slots: u32,
        work_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Agent {
        Agent::start_program(
            &bin("hetpilot-agent"),
            url,
            platform,
            token,
            slots,
            work_dir,
            extra,
            env,
        )
    }

    /// [`Agent::start_env`] with the agent binary `program` (another build's).
    #[allow(clippy::too_many_arguments)]
    pub fn start_program(
        program: &Path,
        url: &str,
        platform: &str,
        token: &str,
        slots: u32,
        work_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Agent {
        std::fs::create_dir_all(work_dir).unwrap();
        let log = std::fs::File::create(work_dir.join("agent.log")).unwrap();
        let child = Command::new(program)
            .args([
                "--manager",
                url,
                "--platform",
                platform,
                "--slots",
                &slots.to_string(),
            ])
            .arg("--work-dir")
            .arg(work_dir)
            .args(extra)
            .env("HETPILOT_AGENT_TOKEN", token)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting hetpilot-agent");
        Agent {
            child,
            work_dir: work_dir.to_path_buf(),
        }
    }

    /// Waits for the agent to exit; returns its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let child = &mut self.child;
        wait_until("the agent to exit", timeout, || {
            child.try_wait().ok().flatten()
        })
        .code()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.work_dir.join("agent.log")).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            print_log_tail("agent", &self.work_dir.join("agent.log"));
        }
    }
}

/// A depot (`hetpilot-agent serve-files`) on 127.0.0.1.
pub struct Depot {
    pub child: Child,
    pub url: String,
    pub root: PathBuf,
    pub log: PathBuf,
}

impl Depot {
    /// Starts depot `name` serving `root` with `secret_file`; returns once it answers.
    pub fn start(name: &str, root: &Path, secret_file: &Path, log: &Path) -> Depot {
        std::fs::create_dir_all(root).unwrap();
        let port = free_port();
        let child = Command::new(bin("hetpilot-agent"))
            .args(["serve-files", "--name", name, "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--root")
            .arg(root)
            .arg("--secret-file")
            .arg(secret_file)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("starting hetpilot-agent serve-files");
        let url = format!("http://127.0.0.1:{port}");
        let client = Client::new();
        wait_until("the depot to answer", Duration::from_secs(30), || {
            client.get(format!("{url}/probe/x")).send().ok()
        });
        Depot {
            child,
            url,
            root: root.to_path_buf(),
            log: log.to_path_buf(),
        }
    }
}

impl Drop for Depot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Raw HTTP calls, for status-code tests.
pub struct Http {
    client: Client,
    base: String,
}

impl Http {
    fn send(&self, req: reqwest::blocking::RequestBuilder, token: &str) -> (u16, Value) {
        let req = if token.is_empty() {
            req
        } else {
            req.bearer_auth(token)
        };
        let resp = req.send().expect("HTTP call");
        let status = resp.status().as_u16();
        (status, resp.json().unwrap_or(Value::Null))
    }

    pub fn get(&self, path: &str, token: &str) -> (u16, Value) {
        self.send(self.client.get(format!("{}{path}", self.base)), token)
    }

    pub fn post(&self, path: &str, token: &str, body: &Value) -> (u16, Value) {
        self.send(
            self.client.post(format!("{}{path}", self.base)).json(body),
            token,
        )
    }

    /// The status of a raw POST, or None if the connection broke before an answer.
    pub fn try_post_bytes(&self, path: &str, token: &str, body: Vec<u8>) -> Option<u16> {
        let req = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json");
        req.bearer_auth(token)
            .body(body)
            .send()
            .ok()
            .map(|r| r.status().as_u16())
    }

    pub fn post_bytes(&self, path: &str, token: &str, body: Vec<u8>) -> (u16, Value) {
        let req = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body);
        self.send(req, token)
    }
}

/// An application spec as JSON: `command` over an array of `n` tasks.
pub fn array_app(name: &str, command: &str, n: u64) -> Value {
    serde_json::json!({"name": name, "command": command, "tasks": {"array": {"start": 0, "end": n - 1}}})
}

/// `len` bytes of a pattern that differs by `seed`: test file contents.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}
