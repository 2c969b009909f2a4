//! The manager's trust boundary against a real manager, probed as an attacker would with an
//! ordinary user token, an agent credential or a registration token: numbers out of range,
//! stored rows start-up cannot read, credentials used beyond their job, hostile names and
//! paths, re-issued tokens, quotas, and the modes of what the manager keeps on disk.

use hetpilot_e2e::{array_app, free_port, wait_until, Manager};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

fn put(m: &Manager, token: &str, path: &str, data: &[u8]) -> u16 {
    reqwest::blocking::Client::new()
        .put(format!("{}{path}", m.url))
        .bearer_auth(token)
        .body(data.to_vec())
        .send()
        .unwrap()
        .status()
        .as_u16()
}

fn get(m: &Manager, token: &str, path: &str) -> (u16, Vec<u8>) {
    let r = reqwest::blocking::Client::new()
        .get(format!("{}{path}", m.url))
        .bearer_auth(token)
        .send()
        .unwrap();
    (r.status().as_u16(), r.bytes().unwrap().to_vec())
}

fn registration(cores: u64, memory_mb: u64) -> Value {
    json!({"platform": "local", "hostname": "h", "cores": cores, "memory_mb": memory_mb, "slots": 1})
}

/// Registers an agent over HTTP; returns its id and credential.
fn register(m: &Manager) -> (u64, String) {
    let (s, b) = m.http().post(
        "/v1/agents",
        &m.agent_token("local"),
        &registration(1, 1024),
    );
    assert_eq!(s, 200, "{b}");
    (
        b["agent"].as_u64().unwrap(),
        b["credential"].as_str().unwrap().to_string(),
    )
}

/// The status of an empty heartbeat of agent `id`.
fn heartbeat(m: &Manager, id: u64, cred: &str) -> u16 {
    m.http()
        .post(
            &format!("/v1/agents/{id}/heartbeat"),
            cred,
            &json!({"seen_up_to_ms": 0, "held": []}),
        )
        .0
}

fn result(task: &Value, wall_ms: f64, cpu_ms: f64) -> Value {
    json!({"results": [{"task": task, "attempt": 1, "outcome": "success", "exit_code": 0, "signal": null,
        "measurements": {"started_at_ms": 1, "ended_at_ms": 2, "wall_ms": wall_ms, "user_cpu_ms": cpu_ms,
        "sys_cpu_ms": 0.0, "max_rss_kb": 1, "co_runners": []}, "stdout_path": null, "stderr_path": null,
        "error": null}]})
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn numbers_out_of_range_get_400_naming_the_field_and_a_stored_one_cannot_stop_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let reg = m.agent_token("local");
    for (body, field) in [
        (registration(1, 1 << 44), "memory_mb"),
        (registration(0, 1), "cores"),
        (registration(1 << 20, 1), "cores"),
    ] {
        let (s, b) = http.post("/v1/agents", &reg, &body);
        assert_eq!(s, 400, "{b}");
        assert!(b["error"].as_str().unwrap().contains(field), "{b}");
    }
    let app = m.submit(array_app("kept", "true", 2));
    // Rows an earlier version could store: an agent with 2^44 MiB (whose replay panicked),
    // an application whose spec cannot be read, one whose lines are missing.
    m.kill();
    {
        let db = rusqlite::Connection::open(dir.path().join("hetpilot.db")).unwrap();
        db.execute(
            "INSERT INTO agents (id, credential_hash, platform, hostname, cores, memory_mb, slots,
                registered_ms, state) VALUES (77, 'x', 'local', 'h', 1, ?1, 1, 0, 'active')",
            [1i64 << 44],
        )
        .unwrap();
        db.execute(
            "INSERT INTO apps (id, owner, name, spec, submitted_ms) VALUES (90, 'admin', 'bad', '{not json', 0)",
            [],
        )
        .unwrap();
        let spec = json!({"name": "lines", "command": "echo {}", "tasks": {"lines": ["a", "b"]}});
        db.execute(
            "INSERT INTO apps (id, owner, name, spec, submitted_ms) VALUES (91, 'admin', 'lines', ?1, 0)",
            [spec.to_string()],
        )
        .unwrap();
        db.execute(
            "INSERT INTO tasks (app_id, idx, input, state, attempt) VALUES (91, 0, NULL, 0, 0)",
            [],
        )
        .unwrap();
    }
    let m = Manager::start_on(dir.path(), m.port, 30.0, &[]);
    let (s, apps) = m.http().get("/v1/apps", &m.admin);
    assert_eq!(s, 200);
    let ids: Vec<u64> = apps
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["app"].as_u64().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![app],
        "the good application is back, the bad rows are not"
    );
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    assert!(
        log.contains("apps row 90") && log.contains("apps row 91"),
        "skipped rows are reported: {log}"
    );
    assert!(!log.contains("panicked"), "{log}");
    // A page past the end is empty, not the first page again.
    let (s, page) = m.http().get(
        &format!("/v1/apps/{app}/tasks?offset=9223372036854775808"),
        &m.admin,
    );
    assert_eq!((s, page), (200, json!([])));
}

#[test]
fn an_agent_reaches_an_applications_files_only_while_it_holds_one_of_its_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let alice = m.create_user("alice");
    assert_eq!(put(&m, &alice, "/v1/files/secret.txt", b"alice's"), 201);
    let (s, b) = http.post("/v1/apps", &alice, &array_app("a", "true", 1));
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    let path = format!("/v1/apps/{app}/files/secret.txt");
    let (id, cred) = register(&m);
    assert_eq!(get(&m, &cred, &path).0, 403, "no lease of the app yet");
    let (s, pulled) = http.post(
        &format!("/v1/agents/{id}/pull"),
        &cred,
        &json!({"max": 1, "wait_ms": 0}),
    );
    assert_eq!(s, 200, "{pulled}");
    let task = pulled["tasks"][0]["task"].clone();
    assert_eq!(get(&m, &cred, &path), (200, b"alice's".to_vec()));
    let (s, b) = http.post(
        &format!("/v1/agents/{id}/results"),
        &cred,
        &result(&task, 5.0, 1.0),
    );
    assert_eq!(s, 200, "{b}");
    assert_eq!(get(&m, &cred, &path).0, 403, "the task ended");
    assert_eq!(put(&m, &cred, &path, b"overwritten"), 403);
    let (s, _) = http.post(&format!("/v1/agents/{id}/deregister"), &cred, &json!({}));
    assert_eq!(s, 200);
    assert_eq!(
        get(&m, &cred, &path).0,
        401,
        "a deregistered agent's credential is dead"
    );
    assert_eq!(heartbeat(&m, id, &cred), 401);
}

#[test]
fn a_lost_agents_credential_dies_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 0.5);
    let (id, cred) = register(&m);
    let http = m.http();
    wait_until(
        "the silent agent to be lost",
        Duration::from_secs(20),
        || {
            let (_, agents) = http.get("/v1/agents", &m.admin);
            (agents[0]["state"] == "lost").then_some(())
        },
    );
    assert_eq!(heartbeat(&m, id, &cred), 401);
}

#[test]
fn reports_are_checked_against_their_lease_before_they_reach_usage() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let victim = m.create_user("victim");
    let (s, b) = http.post("/v1/apps", &victim, &array_app("v", "true", 2));
    assert_eq!(s, 200, "{b}");
    let (id, cred) = register(&m);
    let (_, pulled) = http.post(
        &format!("/v1/agents/{id}/pull"),
        &cred,
        &json!({"max": 2, "wait_ms": 0}),
    );
    let (t0, t1) = (
        pulled["tasks"][0]["task"].clone(),
        pulled["tasks"][1]["task"].clone(),
    );
    let (s, b) = http.post(
        &format!("/v1/agents/{id}/results"),
        &cred,
        &result(&t0, -1.0, 0.0),
    );
    assert_eq!(s, 400, "{b}");
    assert!(b["error"].as_str().unwrap().contains("wall_ms"), "{b}");
    let (s, b) = http.post(
        &format!("/v1/agents/{id}/results"),
        &cred,
        &result(&t1, 1e300, 1e300),
    );
    assert_eq!(s, 200, "{b}");
    let (wall, cpu): (f64, f64) = m
        .db()
        .query_row(
            "SELECT wall_ms, user_cpu_ms FROM attempts WHERE outcome IS NOT NULL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(
        wall <= 60_000.0,
        "wall time clamped to the lease's age: {wall}"
    );
    assert!(cpu <= wall + 5_000.0, "CPU clamped to 1 core × wall: {cpu}");
    let (_, usage) = http.get("/v1/usage", &m.admin);
    let text = usage.to_string();
    assert!(!text.contains("e29") && !text.contains("e30"), "{text}");
}

#[test]
fn hostile_names_and_paths_get_clear_4xx_and_reach_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    for name in [
        ".",
        "..",
        "Alice",
        "a/b",
        "",
        &"a".repeat(33),
        "ev\u{202E}il",
    ] {
        let (s, b) = http.post("/v1/users", &m.admin, &json!({ "name": name }));
        assert_eq!(s, 400, "{name:?}: {b}");
    }
    let alice = m.create_user("alice");
    let (s, b) = http.post("/v1/apps", &alice, &array_app("gpj.exe\u{202E}", "true", 1));
    assert_eq!(s, 400, "{b}");
    let mut climbing = array_app("out", "true", 1);
    climbing["output_dir"] = json!("/scratch/shared/../../etc");
    let (s, b) = http.post("/v1/apps", &alice, &climbing);
    assert_eq!(s, 400, "{b}");
    assert!(b["error"].as_str().unwrap().contains("output_dir"), "{b}");
    assert_eq!(put(&m, &alice, "/v1/files/f.txt", b"x"), 201);
    let user_dir = dir.path().join("files/alice");
    std::os::unix::fs::symlink(dir.path().join("admin.token"), user_dir.join("link")).unwrap();
    std::os::unix::fs::symlink(dir.path(), user_dir.join("up")).unwrap();
    std::fs::create_dir(user_dir.join("sub")).unwrap();
    assert_eq!(
        get(&m, &alice, "/v1/files/link").0,
        404,
        "no symlink is followed"
    );
    assert_eq!(get(&m, &alice, "/v1/files/up/admin.token").0, 404);
    assert_eq!(put(&m, &alice, "/v1/files/up/x", b"x"), 404);
    assert_eq!(
        put(&m, &alice, "/v1/files/link", b"x"),
        201,
        "replaces the link itself"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("admin.token"))
            .unwrap()
            .trim(),
        m.admin,
        "the link's target is untouched"
    );
    assert_eq!(
        put(&m, &alice, "/v1/files/sub", b"x"),
        409,
        "a directory is in the way"
    );
    assert_eq!(get(&m, &alice, "/v1/files/sub").0, 404);
    assert_eq!(get(&m, &alice, "/v1/files/f.txt/x").0, 404);
    assert_eq!(put(&m, &alice, "/v1/files/f.txt/x", b"x"), 404);
    let long = "n".repeat(300);
    assert_eq!(get(&m, &alice, &format!("/v1/files/{long}")).0, 400);
    assert_eq!(put(&m, &alice, &format!("/v1/files/{long}"), b"x"), 400);
    // A user stored before names were checked reaches no other directory.
    {
        let db = rusqlite::Connection::open(dir.path().join("hetpilot.db")).unwrap();
        db.execute(
            "INSERT INTO users (name, token_hash, is_admin, created_ms) VALUES ('..', ?1, 0, 0)",
            [hex_sha256("hpu_dotdot")],
        )
        .unwrap();
    }
    let m = restart(m);
    let (s, body) = get(&m, "hpu_dotdot", "/v1/files/admin.token");
    assert_eq!(s, 403, "{}", String::from_utf8_lossy(&body));
    assert_eq!(get(&m, "hpu_dotdot", "/v1/files/hetpilot.db").0, 403);
}

fn hex_sha256(s: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

fn restart(m: Manager) -> Manager {
    let (dir, port) = (m.dir.clone(), m.port);
    drop(m);
    Manager::start_on(&dir, port, 30.0, &[])
}

#[test]
fn re_issued_tokens_revoke_the_old_ones_and_the_admin_is_rotated_on_purpose() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let first = m.create_user("alice");
    let second = m.create_user("alice");
    assert_eq!(
        http.get("/v1/apps", &first).0,
        401,
        "the old token is revoked"
    );
    assert_eq!(http.get("/v1/apps", &second).0, 200);
    let (s, b) = http.post("/v1/users", &m.admin, &json!({"name": "admin"}));
    assert_eq!(s, 409, "{b}");
    assert!(b["error"].as_str().unwrap().contains("rotate-admin"), "{b}");
    assert_eq!(http.get("/v1/agents", &m.admin).0, 200, "still the admin");
    let o = m.cli(&["token", "rotate-admin"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let new_admin = String::from_utf8(o.stdout).unwrap().trim().to_string();
    assert_eq!(http.get("/v1/agents", &m.admin).0, 401);
    assert_eq!(http.get("/v1/agents", &new_admin).0, 200);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("admin.token"))
            .unwrap()
            .trim(),
        new_admin
    );
    assert!(
        !dir.path().join("admin.token.new").exists(),
        "the rotation's new file was renamed into place"
    );
    // Survives a restart: the admin is still an admin, alice's old token still dead.
    let m = restart(m);
    assert_eq!(m.admin, new_admin);
    assert_eq!(http.get("/v1/agents", &new_admin).0, 200);
    assert_eq!(http.get("/v1/apps", &first).0, 401);
}

#[test]
fn registration_tokens_expire_are_listed_and_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let (s, b) = http.post(
        "/v1/agent-tokens",
        &m.admin,
        &json!({"platform": "local", "ttl_secs": 365 * 24 * 3600}),
    );
    assert_eq!(s, 400, "{b}");
    assert!(b["error"].as_str().unwrap().contains("ttl_secs"), "{b}");
    let token = m.agent_token("local");
    let (s, list) = http.get("/v1/agent-tokens", &m.admin);
    assert_eq!(s, 200);
    let list = list.as_array().unwrap().clone();
    assert_eq!(list.len(), 1);
    let left =
        list[0]["expires_at_ms"].as_u64().unwrap() - list[0]["created_at_ms"].as_u64().unwrap();
    assert_eq!(left, 24 * 3600 * 1000, "one day by default");
    let id = list[0]["id"].as_str().unwrap();
    assert_eq!(id, &hex_sha256(&token)[..12]);
    let o = m.cli(&["token", "revoke", id]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        http.post("/v1/agents", &token, &registration(1, 1)).0,
        401,
        "a revoked token registers nothing"
    );
    assert_eq!(http.get("/v1/agent-tokens", &m.admin).1, json!([]));
    let alice = m.create_user("alice");
    assert_eq!(http.get("/v1/agent-tokens", &alice).0, 403);
}

#[test]
fn per_user_quotas_refuse_what_would_exceed_them() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        hetpilot_e2e::free_port(),
        30.0,
        &[
            ("HETPILOT_QUOTAS__TASKS_PER_SUBMIT", "10"),
            ("HETPILOT_QUOTAS__QUEUED_TASKS_PER_USER", "15"),
        ],
    );
    let http = m.http();
    let alice = m.create_user("alice");
    let (s, b) = http.post("/v1/apps", &alice, &array_app("big", "true", 11));
    assert_eq!(s, 403, "{b}");
    assert!(
        b["error"].as_str().unwrap().contains("tasks_per_submit"),
        "{b}"
    );
    assert_eq!(
        http.post("/v1/apps", &alice, &array_app("a", "true", 10)).0,
        200
    );
    let (s, b) = http.post("/v1/apps", &alice, &array_app("b", "true", 6));
    assert_eq!(s, 403, "{b}");
    assert!(
        b["error"]
            .as_str()
            .unwrap()
            .contains("queued_tasks_per_user"),
        "{b}"
    );
    let bob = m.create_user("bob");
    assert_eq!(
        http.post("/v1/apps", &bob, &array_app("b", "true", 6)).0,
        200,
        "quotas are per user"
    );
    let (_, apps) = http.get("/v1/apps", &alice);
    assert_eq!(
        apps.as_array().unwrap().len(),
        1,
        "nothing of the refused ones stored"
    );
}

#[test]
fn what_the_manager_keeps_on_disk_is_its_owners_only() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let m = Manager::start(&data, 30.0);
    let alice = m.create_user("alice");
    assert_eq!(put(&m, &alice, "/v1/files/d/up.txt", b"x"), 201);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("hetpilot.db")), 0o600);
    assert_eq!(mode(&data.join("hetpilot.db-wal")), 0o600);
    assert_eq!(mode(&data.join("files/alice")), 0o700);
    assert_eq!(mode(&data.join("files/alice/d")), 0o700);
    assert_eq!(mode(&data.join("files/alice/d/up.txt")), 0o600);
}

#[test]
fn logs_never_print_a_file_an_agent_merely_names() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET").unwrap();
    let app = m.submit(array_app("a", "true", 1));
    let (id, cred) = register(&m);
    let http = m.http();
    let (_, pulled) = http.post(
        &format!("/v1/agents/{id}/pull"),
        &cred,
        &json!({"max": 1, "wait_ms": 0}),
    );
    let mut report = result(&pulled["tasks"][0]["task"], 1.0, 0.0);
    report["results"][0]["stdout_path"] = json!(secret.to_str().unwrap());
    report["results"][0]["output_tail"] = json!("tail\u{1b}]0;pwned\u{7}");
    assert_eq!(
        http.post(&format!("/v1/agents/{id}/results"), &cred, &report)
            .0,
        200
    );
    m.wait_finished(app, Duration::from_secs(20));
    let o = m.cli(&["logs", &format!("{app}.0")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains("TOP-SECRET"), "{out}");
    assert!(
        out.contains("tail") && !out.contains('\u{1b}'),
        "escapes are shown, not sent: {out:?}"
    );
}

/// How many long polls on `route` the manager has authenticated (its debug log).
fn long_polls_authenticated(m: &Manager, route: &str) -> usize {
    std::fs::read_to_string(m.dir.join("manager.log"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("long poll authenticated") && l.contains(route))
        .count()
}

/// Opens a long poll (`body` makes it a POST) on a thread; returns its status, its body,
/// and when it was answered.
fn long_poll(
    m: &Manager,
    token: &str,
    path: &str,
    body: Option<Value>,
) -> std::thread::JoinHandle<(u16, Value, Instant)> {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let url = format!("{}{path}", m.url);
    let req = match body {
        Some(b) => client.post(url).json(&b),
        None => client.get(url),
    }
    .bearer_auth(token);
    std::thread::spawn(move || {
        let r = req.send().expect("the long poll");
        let status = r.status().as_u16();
        (status, r.json().unwrap_or(Value::Null), Instant::now())
    })
}

/// Waits for the `nth` long poll on `route`, `poll`, to be authenticated, runs `revoke`,
/// and checks the poll ends with 401 promptly, well before its 20 s wait.
fn ends_at_revocation(
    m: &Manager,
    route: &str,
    nth: usize,
    poll: std::thread::JoinHandle<(u16, Value, Instant)>,
    revoke: impl FnOnce(),
) {
    wait_until(
        &format!("long poll {nth} on {route} to be authenticated"),
        Duration::from_secs(30),
        || (long_polls_authenticated(m, route) >= nth).then_some(()),
    );
    let revoked = Instant::now();
    revoke();
    let (status, body, answered) = poll.join().unwrap();
    let after = answered.saturating_duration_since(revoked);
    assert_eq!(
        status, 401,
        "{route}, {after:?} after the revocation: {body}"
    );
    assert!(
        body["error"].as_str().unwrap().contains("revoked"),
        "{body}"
    );
    assert!(
        after < Duration::from_secs(5),
        "{route}: answered {after:?} after the revocation"
    );
}

#[test]
fn long_polls_end_with_401_when_their_token_is_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        free_port(),
        30.0,
        &[("RUST_LOG", "info,hetpilot::server::long_poll=debug")],
    );
    let http = m.http();

    // An agent's pull, when the agent leaves (its credential is revoked).
    let (agent, credential) = register(&m);
    let pull = long_poll(
        &m,
        &credential,
        &format!("/v1/agents/{agent}/pull"),
        Some(json!({"max": 1, "wait_ms": 20_000})),
    );
    ends_at_revocation(&m, "/v1/agents/{agent}/pull", 1, pull, || {
        let (s, b) = http.post(
            &format!("/v1/agents/{agent}/deregister"),
            &credential,
            &json!({}),
        );
        assert_eq!(s, 200, "{b}");
    });

    // A user's wait on an application that cannot progress (no agent), when the user's
    // token is re-issued.
    let alice = m.create_user("alice");
    let (s, b) = http.post("/v1/apps", &alice, &array_app("stuck", "true", 1));
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    let wait = format!("/v1/apps/{app}?wait_ms=20000&seen=0");
    let poll = long_poll(&m, &alice, &wait, None);
    ends_at_revocation(&m, "/v1/apps/{app}", 1, poll, || {
        m.create_user("alice");
    });

    // The admin's wait, when the admin token is rotated.
    let poll = long_poll(&m, &m.admin, &wait, None);
    ends_at_revocation(&m, "/v1/apps/{app}", 2, poll, || {
        let o = m.cli(&["token", "rotate-admin"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    });
}
