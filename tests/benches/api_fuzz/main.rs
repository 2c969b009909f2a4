//! Bounded API fuzz run (no input may panic anything): starts a real `hetpilot
//! serve` on 127.0.0.1 with a fresh data directory, creates two users, a registration
//! token, an agent, files and a few applications, then sends `--requests` seeded random
//! requests across every `/v1` route: valid ones, mutated JSON bodies, mutated path and
//! query parameters, and every kind of token (none, garbage, admin, owner, another user,
//! registration, agent). It counts answers by status class, writes every 5xx (and every
//! request that got no answer) with its request to `<out>/api_fuzz_5xx.txt`, checks that
//! the manager is still alive and never logged a panic, probes a few known wrong answers
//! that are not 5xx (task listing offsets past 2^63, users named `.` and `..` and what their
//! file roots reach), and that the manager restarts on the same data directory. Exit status
//! 0 only when all of that holds; on failure the data directory is kept for inspection.
//!
//! Run (debug binaries, as the e2e tests):
//! `cargo build --workspace --bins && nice cargo test -p hetpilot-e2e --bench api_fuzz --
//! --requests 100000 --concurrency 8 --seed 1`; release: `cargo build --release --workspace
//! --bins && cargo bench -p hetpilot-e2e --bench api_fuzz -- --requests 100000`.

mod mutate;
mod routes;
mod send;

use hetpilot_e2e::{array_app, bin_dir, free_port, signal, wait_until, Manager};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use reqwest::blocking::Client;
use routes::{Req, World, FILE};
use send::{send, Answer, TIMEOUT};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

struct Args {
    requests: u64,
    concurrency: u64,
    seed: u64,
    max_secs: u64,
    out: PathBuf,
}

fn args() -> Args {
    let mut a = Args {
        requests: 100_000,
        concurrency: 8,
        seed: 1,
        max_secs: 3600,
        out: bin_dir().join("api-fuzz"),
    };
    let argv: Vec<String> = std::env::args().collect();
    for pair in argv.windows(2) {
        let number = || -> u64 {
            pair[1]
                .parse()
                .unwrap_or_else(|_| panic!("{} needs a number, got {}", pair[0], pair[1]))
        };
        match pair[0].as_str() {
            "--requests" => a.requests = number(),
            "--concurrency" => a.concurrency = number().max(1),
            "--seed" => a.seed = number(),
            "--max-secs" => a.max_secs = number(),
            "--out" => a.out = PathBuf::from(&pair[1]),
            _ => {}
        }
    }
    a
}

fn put(client: &Client, m: &Manager, token: &str, path: &str, body: &[u8]) {
    let r = client
        .put(format!("{}{path}", m.url))
        .bearer_auth(token)
        .body(body.to_vec())
        .send()
        .expect("PUT");
    assert!(r.status().is_success(), "PUT {path}: {}", r.status());
}

/// Users, tokens, an agent, files and applications for the requests to refer to.
fn setup(m: &Manager) -> World {
    let http = m.http();
    let client = Client::new();
    let alice = m.create_user("alice");
    let bob = m.create_user("bob");
    let registration = m.agent_token("local");
    let (s, agent) = http.post(
        "/v1/agents",
        &registration,
        &json!({"platform": "local", "hostname": "node", "cores": 2, "memory_mb": 1024}),
    );
    assert_eq!(s, 200, "{agent}");
    let agents = vec![(
        agent["agent"].as_u64().expect("agent id"),
        agent["credential"]
            .as_str()
            .expect("credential")
            .to_string(),
    )];
    for name in [FILE, "data/in1.txt", "notes.txt"] {
        put(&client, m, &alice, &format!("/v1/files/{name}"), b"fuzz\n");
    }
    let submit = |token: &str| -> Vec<u64> {
        (0..3)
            .map(|i| {
                let (s, b) = http.post("/v1/apps", token, &array_app("setup", "true", 4 + i));
                assert_eq!(s, 200, "{b}");
                b["app"].as_u64().expect("app id")
            })
            .collect()
    };
    let alice_apps = submit(&alice);
    let bob_apps = submit(&bob);
    put(
        &client,
        m,
        &alice,
        &format!("/v1/apps/{}/files/{FILE}", alice_apps[0]),
        b"app file\n",
    );
    World {
        admin: m.admin.clone(),
        alice,
        bob,
        registration,
        alice_apps,
        bob_apps,
        agents: Mutex::new(agents),
    }
}

/// A 5xx or unanswered request's kind: status (0: no answer), method, route, damage.
type FailureKey = (u16, &'static str, &'static str, &'static str);

/// What the run saw.
#[derive(Default)]
struct Tally {
    /// Index 0: no answer (transport error or timeout); 1..=5: status class.
    classes: [AtomicU64; 6],
    /// (status, method, route, damage) -> count, for 5xx and transport errors.
    failures: Mutex<BTreeMap<FailureKey, u64>>,
    /// Requests answered only on a fresh connection after the pooled one broke.
    retried: AtomicU64,
}

fn record(tally: &Tally, findings: &Mutex<std::fs::File>, req: &Req, answer: &Answer) {
    let (status, text) = match answer {
        Answer::Status(s, t) => (*s, t.as_str()),
        Answer::Transport(e) => (0, e.as_str()),
    };
    tally.classes[usize::from(status / 100).min(5)].fetch_add(1, Ordering::Relaxed);
    if status != 0 && status < 500 {
        return;
    }
    *tally
        .failures
        .lock()
        .expect("tally")
        .entry((status, req.method, req.route, req.how))
        .or_default() += 1;
    let body = req
        .body
        .as_deref()
        .map(|b| send::truncate(&String::from_utf8_lossy(b)))
        .unwrap_or_default();
    let mut f = findings.lock().expect("findings file");
    writeln!(
        f,
        "=== {status} {} {} (route {}, damage {}, token {:?})\nrequest body: {body}\nanswer: {text}\n",
        req.method, req.path, req.route, req.how, req.tok
    )
    .expect("writing findings");
}

/// What every worker shares.
struct Run<'a> {
    args: &'a Args,
    world: &'a World,
    addr: SocketAddr,
    /// Requests handed out so far.
    next: AtomicU64,
    deadline: Instant,
    tally: Tally,
    findings: Mutex<std::fs::File>,
}

fn worker(t: u64, run: &Run) {
    let Run {
        args: a,
        world,
        addr,
        next,
        deadline,
        tally,
        findings,
    } = run;
    let (addr, deadline) = (*addr, *deadline);
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed.wrapping_mul(1_000_003).wrapping_add(t));
    let client = Client::builder()
        .timeout(TIMEOUT)
        .build()
        .expect("HTTP client");
    while next.fetch_add(1, Ordering::Relaxed) < a.requests && Instant::now() < deadline {
        let req = world.request(&mut rng);
        let sent = send(&client, addr, &req);
        tally
            .retried
            .fetch_add(u64::from(sent.retried), Ordering::Relaxed);
        let answer = sent.answer;
        if let Answer::Status(200, text) = &answer {
            if req.route == "/v1/agents" && req.method == "POST" {
                let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                if let (Some(id), Some(c)) = (v["agent"].as_u64(), v["credential"].as_str()) {
                    world
                        .agents
                        .lock()
                        .expect("agent pool")
                        .push((id, c.to_string()));
                }
            }
        }
        record(tally, findings, &req, &answer);
    }
}

fn panics_in(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches("panicked")
        .count()
}

/// Known wrong answers that are not 5xx: prints what the manager does today and returns
/// how many answers were wrong.
fn probes(m: &Manager, world: &World) -> u32 {
    let mut wrong = 0;
    let http = m.http();
    let app = world.alice_apps[1];
    for offset in [
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551615",
    ] {
        let (s, b) = http.get(
            &format!("/v1/apps/{app}/tasks?offset={offset}&limit=2"),
            &world.alice,
        );
        let n = b.as_array().map_or(0, Vec::len);
        wrong += u32::from(n > 0);
        println!("probe,tasks_offset={offset},status={s},tasks_returned={n}");
    }
    let (s, _) = http.get(&format!("/v1/apps/{}", world.bob_apps[0]), &world.alice);
    println!("probe,foreign_app_as_alice,status={s}");
    let client = Client::new();
    for name in [".", "..", "a/b", &"u".repeat(256)] {
        let (s, b) = http.post("/v1/users", &world.admin, &json!({ "name": name }));
        let shown = name.get(..8).unwrap_or(name);
        wrong += u32::from(s == 200 && matches!(name, "." | ".."));
        println!("probe,user_named={shown:?}(len {}),status={s}", name.len());
        let Some(token) = b["token"].as_str() else {
            continue;
        };
        // Does this user's file root lie outside `files/`, or hold other users' files?
        let put = client
            .put(format!("{}/v1/files/escape-probe.txt", m.url))
            .bearer_auth(token)
            .body("probe")
            .send()
            .map(|r| r.status().as_u16());
        let escaped = m.dir.join("escape-probe.txt").exists();
        let read = client
            .get(format!("{}/v1/files/alice/{FILE}", m.url))
            .bearer_auth(token)
            .send()
            .map(|r| r.status().as_u16());
        // The manager's own files sit one level above `files/`.
        let admin_token = client
            .get(format!("{}/v1/files/admin.token", m.url))
            .bearer_auth(token)
            .send()
            .map(|r| r.status().as_u16());
        wrong += u32::from(escaped)
            + u32::from(matches!(read, Ok(200)))
            + u32::from(matches!(admin_token, Ok(200)));
        println!(
            "probe,user_named={shown:?},put_status={put:?},file_outside_files_root={escaped},\
             get_alice_file_status={read:?},get_admin_token_status={admin_token:?}"
        );
    }
    wrong
}

/// Stops the manager (SIGTERM, then SIGKILL) and starts it again on the same data directory.
fn restart(m: &mut Manager) -> Result<(), String> {
    signal(&m.child, libc::SIGTERM);
    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("the manager to stop", Duration::from_secs(20), || {
            m.child.try_wait().ok().flatten()
        })
    }));
    if stopped.is_err() {
        m.kill();
    }
    let dir = m.dir.clone();
    let again = std::panic::catch_unwind(|| Manager::start_on(&dir, free_port(), 30.0, &[]))
        .map_err(|_| "the manager did not start again on its data directory".to_string())?;
    let http = again.http();
    let (health, _) = http.get("/v1/health", "");
    let (apps, _) = http.get("/v1/apps", &again.admin);
    if (health, apps) != (200, 200) {
        return Err(format!("after restart: health {health}, apps {apps}"));
    }
    *m = again;
    Ok(())
}

fn main() {
    let a = args();
    std::fs::create_dir_all(&a.out).expect("output directory");
    let findings_path = a.out.join("api_fuzz_5xx.txt");
    let findings = Mutex::new(std::fs::File::create(&findings_path).expect("findings file"));
    let dir = tempfile::tempdir().expect("data directory");
    let mut m = Manager::start(dir.path(), 30.0);
    let world = setup(&m);
    let addr: SocketAddr = m.url.trim_start_matches("http://").parse().expect("URL");
    let started = Instant::now();
    let run = Run {
        args: &a,
        world: &world,
        addr,
        next: AtomicU64::new(0),
        deadline: started + Duration::from_secs(a.max_secs),
        tally: Tally::default(),
        findings,
    };
    std::thread::scope(|s| {
        for t in 0..a.concurrency {
            let run = &run;
            s.spawn(move || worker(t, run));
        }
    });
    let tally = run.tally;
    let secs = started.elapsed().as_secs_f64();
    let sent: u64 = tally
        .classes
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum();
    let alive = m.child.try_wait().ok().flatten().is_none();
    let wrong = if alive { probes(&m, &world) } else { 0 };
    let log = dir.path().join("manager.log");
    let panics = panics_in(&log);
    let restarted = restart(&mut m);
    let panics_after_restart = panics_in(&log) - panics;
    let c = |i: usize| tally.classes[i].load(Ordering::Relaxed);
    println!(
        "api_fuzz,requests={sent},secs={secs:.1},req_per_s={:.0},concurrency={},seed={},\
         1xx={},2xx={},3xx={},4xx={},5xx={},no_answer={},retried_on_fresh_connection={},alive={alive},panics={panics},\
         wrong_probe_answers={wrong},restart={}",
        sent as f64 / secs,
        a.concurrency,
        a.seed,
        c(1),
        c(2),
        c(3),
        c(4),
        c(5),
        c(0),
        tally.retried.load(Ordering::Relaxed),
        match &restarted {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("FAILED ({e})"),
        }
    );
    for ((status, method, route, how), n) in tally.failures.lock().expect("tally").iter() {
        println!("failure,status={status},{method} {route},damage={how},count={n}");
    }
    std::fs::copy(&log, a.out.join("manager.log")).expect("copying the manager log");
    println!(
        "findings: {} (manager log: {})",
        findings_path.display(),
        a.out.join("manager.log").display()
    );
    let ok = c(5) == 0
        && c(0) == 0
        && wrong == 0
        && alive
        && panics == 0
        && panics_after_restart == 0
        && restarted.is_ok();
    drop(m);
    if !ok {
        let kept = dir.keep();
        println!("data directory kept for inspection: {}", kept.display());
    }
    std::process::exit(if ok { 0 } else { 1 });
}
