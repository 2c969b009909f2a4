//! File stores (`hetpilot-agent serve-files`) with real processes on 127.0.0.1: a manager
//! with a `[[storage]]` entry grants agents access to the owner's files there; tasks read
//! `store://` inputs (fetched once per node) and write `store://` outputs straight to the
//! store, with transfers measured under `store:NAME`. The store refuses requests without
//! a valid grant (401), grants for another owner (403), escapes, and bad ranges; the
//! manager refuses applications naming a store it does not know.

use hetpilot_e2e::{free_port, pattern, wait_until, Depot, Manager};
use hetpilot_transport::store_grant::StoreSecret;
use reqwest::blocking::Client;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const LONG: Duration = Duration::from_secs(120);

/// A store named `lustre`, and a manager configured with it.
struct Site {
    store: Depot,
    manager: Manager,
    secret: PathBuf,
    _dir: tempfile::TempDir,
}

fn site() -> Site {
    site_with(|_, _| String::new())
}

/// A site whose manager configuration also has `extra(store URL, secret file)`.
fn site_with(extra: impl Fn(&str, &str) -> String) -> Site {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("lustre.secret");
    std::fs::write(
        &secret,
        "6b3a55e0261b4d8e9c6f0f4c1a7e2d3b9f8a7c6d5e4f3a2b\n",
    )
    .unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let store = Depot::start(
        "lustre",
        &dir.path().join("store-root"),
        &secret,
        &dir.path().join("store.log"),
    );
    let config = dir.path().join("hetpilot.toml");
    std::fs::write(
        &config,
        format!(
            "[[storage]]\nname = \"lustre\"\nurl = \"{}\"\nsecret_file = {:?}\nio_mib_per_s = 500\n{}",
            store.url,
            secret.display().to_string(),
            extra(&store.url, &secret.display().to_string()),
        ),
    )
    .unwrap();
    let data = dir.path().join("manager");
    std::fs::create_dir_all(&data).unwrap();
    let manager = Manager::start_on(
        &data,
        free_port(),
        30.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    );
    Site {
        store,
        manager,
        secret,
        _dir: dir,
    }
}

/// Puts a file straight into the store's directory, as its admins would.
fn place(root: &Path, owner: &str, name: &str, data: &[u8]) {
    let path = root.join(owner).join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// (status, body) of a GET on the store, with an optional token and range.
fn store_get(url: &str, token: Option<&str>, range: Option<&str>) -> (u16, Vec<u8>) {
    let mut req = Client::new().get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(r) = range {
        req = req.header("range", r);
    }
    let r = req.send().unwrap();
    (r.status().as_u16(), r.bytes().unwrap().to_vec())
}

/// The status of a GET of `path` sent byte for byte, without any client normalizing it.
fn raw_get_status(url: &str, path: &str, token: &str) -> u16 {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"))
}

#[test]
fn tasks_read_and_write_store_files_fetching_shared_inputs_once_per_node() {
    let site = site();
    let m = &site.manager;
    let alice = m.create_user("alice");
    let root = &site.store.root;
    let db = pattern(256 * 1024, 7);
    place(root, "alice", "db/shared.bin", &db);
    let queries: Vec<Vec<u8>> = (0..4).map(|i| pattern(1000 + i * 10, i as u8)).collect();
    for (i, q) in queries.iter().enumerate() {
        place(root, "alice", &format!("q/q{i}.fa"), q);
    }
    // Bob has a file of the same name: alice's tasks must never see it.
    place(root, "bob", "db/shared.bin", b"bob's, not alice's");
    let _agent = m.agent("local", 2, &["--cache-max", "10M"]);
    let (s, b) = m.http().post(
        "/v1/apps",
        &alice,
        &json!({
            "name": "store-blast",
            "command": "sh -c 'cat shared.bin {}.fa > out/{}.out'",
            "tasks": {"lines": ["q0", "q1", "q2", "q3"]},
            "inputs": [{"uri": "store://lustre/db/shared.bin", "size": db.len()},
                       "store://lustre/q/{}.fa"],
            "outputs": ["store://lustre/out/{}.out"],
            "max_attempts": 1
        }),
    );
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    let summary = m.wait_finished(app, LONG);
    let runs: Vec<Value> = (0..4)
        .map(|i| m.http().get(&format!("/v1/tasks/{app}.{i}"), &m.admin).1["last"].clone())
        .collect();
    assert_eq!(summary["counts"]["done"], 4, "{runs:?}");
    for (i, q) in queries.iter().enumerate() {
        let out = std::fs::read(root.join(format!("alice/out/q{i}.out"))).unwrap();
        assert_eq!(
            out,
            [db.as_slice(), q].concat(),
            "output of q{i} on the store"
        );
    }
    assert!(!root.join("bob/out").exists(), "nothing written for bob");

    let rows: Vec<(i64, i64, i64, String)> = wait_until(
        "the staging figures of the 4 runs",
        Duration::from_secs(10),
        || {
            let db = m.db();
            let mut stmt = db
                .prepare(
                    "SELECT bytes_fetched, bytes_cached, bytes_uploaded, transfers
                     FROM attempt_staging WHERE app_id = ?1",
                )
                .ok()?;
            let rows: Vec<_> = stmt
                .query_map([app as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .ok()?
                .collect::<Result<_, _>>()
                .ok()?;
            (rows.len() == 4).then_some(rows)
        },
    );
    let q_bytes: i64 = queries.iter().map(|q| q.len() as i64).sum();
    let fetched: i64 = rows.iter().map(|r| r.0).sum();
    let cached: i64 = rows.iter().map(|r| r.1).sum();
    let uploaded: i64 = rows.iter().map(|r| r.2).sum();
    assert_eq!(
        fetched,
        db.len() as i64 + q_bytes,
        "the shared input is fetched by one task only"
    );
    assert_eq!(
        cached,
        3 * db.len() as i64,
        "three runs found it in the cache"
    );
    assert_eq!(uploaded, 4 * db.len() as i64 + q_bytes);
    for (.., transfers) in &rows {
        let t: Value = serde_json::from_str(transfers).unwrap();
        let endpoints: Vec<&str> = t
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["endpoint"].as_str().unwrap())
            .collect();
        assert_eq!(endpoints, ["store:lustre"], "{t}");
    }
    let big = rows
        .iter()
        .find(|r| r.0 > 100_000)
        .expect("the run that fetched the db");
    let t: Value = serde_json::from_str(&big.3).unwrap();
    assert!(t[0]["mib_per_s"].as_f64().unwrap() > 0.0, "{t}");

    // Bob's file of the same name on the same node is another file: his own is fetched.
    // Declaring the SHA-256 of alice's file gets him no copy of hers from the cache.
    let bob = m.create_user("bob");
    let bob_app = |inputs: Value| {
        let (s, b) = m.http().post(
            "/v1/apps",
            &bob,
            &json!({"name": "bob", "command": "cp shared.bin mine.out",
                    "tasks": {"array": {"start": 0, "end": 0}}, "inputs": inputs,
                    "outputs": ["store://lustre/mine.out"], "max_attempts": 1}),
        );
        assert_eq!(s, 200, "{b}");
        let app = b["app"].as_u64().unwrap();
        m.wait_finished(app, LONG);
        // The task's record may trail the counts by a group commit.
        wait_until("the task's final state", Duration::from_secs(10), || {
            let (_, t) = m.http().get(&format!("/v1/tasks/{app}.0"), &m.admin);
            matches!(t["state"].as_str(), Some("done" | "failed")).then_some(t)
        })
    };
    let own = bob_app(json!(["store://lustre/db/shared.bin"]));
    assert_eq!(own["state"], "done", "{own}");
    let mine = std::fs::read(root.join("bob/mine.out")).unwrap();
    assert_eq!(mine, b"bob's, not alice's");
    let alice_sha = hex::encode(Sha256::digest(&db));
    let guess = bob_app(json!([{"uri": "store://lustre/db/shared.bin", "sha256": alice_sha}]));
    assert_eq!(guess["state"], "failed", "{guess}");
    let error = guess["last"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("checksum mismatch"), "{guess}");

    let log = std::fs::read_to_string(&site.store.log).unwrap();
    let secret = std::fs::read_to_string(&site.secret).unwrap();
    assert!(!log.contains(secret.trim()), "the secret is never logged");
}

#[test]
fn the_store_admits_only_valid_grants_to_their_owners_files() {
    let site = site();
    let root = &site.store.root;
    let url = &site.store.url;
    place(root, "alice", "data.bin", &pattern(1000, 3));
    place(root, "bob", "secret.txt", b"bob only");
    std::os::unix::fs::symlink(root.join("bob"), root.join("alice/bob")).unwrap();
    let secret = StoreSecret::load(&site.secret).unwrap();
    let alice = secret.issue("lustre", "alice", now() + 600);
    let file = format!("{url}/alice/data.bin");

    assert_eq!(store_get(&file, None, None).0, 401, "no token");
    assert_eq!(store_get(&file, Some("alice.1.00"), None).0, 401, "forged");
    let expired = secret.issue("lustre", "alice", now() - 1);
    assert_eq!(store_get(&file, Some(&expired), None).0, 401, "expired");
    let elsewhere = secret.issue("gpfs", "alice", now() + 600);
    assert_eq!(
        store_get(&file, Some(&elsewhere), None).0,
        401,
        "another store's"
    );
    let other_secret = StoreSecret::new(vec![b'x'; 32]).unwrap();
    let forged = other_secret.issue("lustre", "alice", now() + 600);
    assert_eq!(
        store_get(&file, Some(&forged), None).0,
        401,
        "another secret"
    );

    let (s, body) = store_get(&file, Some(&alice), None);
    assert_eq!((s, body), (200, pattern(1000, 3)));
    let (s, body) = store_get(&file, Some(&alice), Some("bytes=10-19"));
    assert_eq!((s, body), (206, pattern(1000, 3)[10..20].to_vec()));
    assert_eq!(store_get(&file, Some(&alice), Some("bytes=5000-")).0, 416);
    let missing = format!("{url}/alice/none.bin");
    assert_eq!(store_get(&missing, Some(&alice), None).0, 404);
    let bobs = format!("{url}/bob/secret.txt");
    assert_eq!(store_get(&bobs, Some(&alice), None).0, 403, "bob's path");
    let through_link = format!("{url}/alice/bob/secret.txt");
    assert_eq!(
        store_get(&through_link, Some(&alice), None).0,
        403,
        "symlink out"
    );
    // HTTP clients resolve `..` before sending: send it as it is.
    for path in ["/alice/../bob/secret.txt", "/alice/%2E%2E/bob/secret.txt"] {
        assert_eq!(raw_get_status(url, path, &alice), 400, "{path}");
    }

    let put = |path: &str, token: &str, body: Vec<u8>| {
        Client::new()
            .put(format!("{url}/{path}"))
            .bearer_auth(token)
            .body(body)
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    let big = pattern(3 << 20, 5);
    assert_eq!(put("alice/res/new.bin", &alice, big.clone()), 201);
    assert_eq!(std::fs::read(root.join("alice/res/new.bin")).unwrap(), big);
    let leftovers: Vec<_> = std::fs::read_dir(root.join("alice/res"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers, ["new.bin"], "no temporary file left");
    assert_eq!(put("bob/planted.txt", &alice, b"x".to_vec()), 403);
    assert!(!root.join("bob/planted.txt").exists());
    let head = Client::new()
        .head(&file)
        .bearer_auth(&alice)
        .send()
        .unwrap();
    assert_eq!(head.status().as_u16(), 200);
    assert_eq!(head.headers()["content-length"], "1000");
}

#[test]
fn agents_get_fresh_grants_with_leased_tasks_and_in_heartbeats() {
    let site = site();
    let m = &site.manager;
    let alice = m.create_user("alice");
    place(&site.store.root, "alice", "in.txt", b"hello");
    let http = m.http();
    let (s, b) = http.post(
        "/v1/apps",
        &alice,
        &json!({"name": "g", "command": "cat in.txt", "tasks": {"array": {"start": 0, "end": 0}},
                "inputs": ["store://lustre/in.txt"]}),
    );
    assert_eq!(s, 200, "{b}");
    let plain = m.submit(json!({"name": "plain", "command": "true",
                                "tasks": {"array": {"start": 0, "end": 0}}}));
    let reg_token = m.agent_token("local");
    let reg = json!({"platform": "local", "hostname": "h", "cores": 1, "memory_mb": 1, "slots": 2});
    let (_, agent) = http.post("/v1/agents", &reg_token, &reg);
    let (id, cred) = (
        agent["agent"].as_u64().unwrap(),
        agent["credential"].as_str().unwrap().to_string(),
    );
    // Pull until both tasks are leased, keeping what came with each.
    let mut pulls: Vec<Value> = Vec::new();
    wait_until("both tasks to be leased", Duration::from_secs(10), || {
        let have: usize = pulls
            .iter()
            .map(|p| p["tasks"].as_array().unwrap().len())
            .sum();
        if have == 2 {
            return Some(());
        }
        let (s, p) = http.post(
            &format!("/v1/agents/{id}/pull"),
            &cred,
            &json!({"max": 2 - have, "wait_ms": 0}),
        );
        assert_eq!(s, 200, "{p}");
        pulls.push(p);
        None
    });
    let is_plain = |t: &Value| t["task"]["app"].as_u64() == Some(plain);
    for p in &pulls {
        let tasks = p["tasks"].as_array().unwrap();
        if tasks.iter().all(is_plain) {
            assert!(
                p.get("grants").is_none(),
                "no grant without a task needing one: {p}"
            );
        }
    }
    let pulled = pulls
        .iter()
        .find(|p| !p["tasks"].as_array().unwrap().iter().all(is_plain))
        .unwrap();
    let grants = pulled["grants"].as_array().expect("grants with the tasks");
    assert_eq!(grants.len(), 1, "one store, one owner: {pulled}");
    let g = &grants[0];
    assert_eq!(
        (g["store"].as_str(), g["owner"].as_str()),
        (Some("lustre"), Some("alice"))
    );
    assert_eq!(g["url"].as_str(), Some(site.store.url.as_str()));
    let expires = g["expires"].as_u64().unwrap();
    assert!(
        expires >= now() + 24 * 3600 - 60,
        "the default TTL is a day"
    );
    let token = g["token"].as_str().unwrap();
    let in_txt = format!("{}/alice/in.txt", site.store.url);
    assert_eq!(
        store_get(&in_txt, Some(token), None),
        (200, b"hello".to_vec())
    );

    let held: Vec<Value> = pulls
        .iter()
        .flat_map(|p| p["tasks"].as_array().unwrap().clone())
        .map(|t| json!({"task": t["task"], "attempt": t["attempt"]}))
        .collect();
    let lease_ms = pulls.iter().map(|p| p["lease_ms"].as_u64().unwrap()).max();
    let beat = |held: &[Value]| {
        let (s, b) = http.post(
            &format!("/v1/agents/{id}/heartbeat"),
            &cred,
            &json!({"seen_up_to_ms": lease_ms, "held": held}),
        );
        assert_eq!(s, 200, "{b}");
        b
    };
    let b = beat(&held);
    let fresh = &b["grants"][0];
    assert_eq!(fresh["owner"], "alice", "{b}");
    assert!(fresh["expires"].as_u64().unwrap() >= expires);
    let only_plain: Vec<Value> = held.iter().filter(|t| is_plain(t)).cloned().collect();
    let b = beat(&only_plain);
    assert!(
        b.get("grants").is_none(),
        "no grant without a task that needs it: {b}"
    );
    // The store task went back to its queue just above: claiming it again yields no
    // grant. Grants follow what the manager leased to the agent, not what it claims.
    let b = beat(&held);
    assert!(b.get("grants").is_none(), "a claim is not a lease: {b}");
}

#[test]
fn an_application_naming_an_unknown_store_is_refused_at_submit() {
    let site = site();
    let m = &site.manager;
    let alice = m.create_user("alice");
    let (s, b) = m.http().post(
        "/v1/apps",
        &alice,
        &json!({"name": "x", "command": "true", "tasks": {"array": {"start": 0, "end": 1}},
                "inputs": ["store://gpfs/db/{}.bin"], "outputs": ["store://lustre/o{}"]}),
    );
    assert_eq!(s, 400, "{b}");
    let e = b["error"].as_str().unwrap();
    assert!(
        e.contains("`gpfs`") && e.contains("configured: lustre"),
        "{e}"
    );
    let (s, b) = m.http().post(
        "/v1/apps",
        &alice,
        &json!({"name": "x", "command": "true", "tasks": {"array": {"start": 0, "end": 1}},
                "outputs": ["store://lustre/../bob/o{}"]}),
    );
    assert_eq!(s, 400, "{b}");
    assert!(b["error"].as_str().unwrap().contains("`..`"), "{b}");
    let (_, apps) = m.http().get("/v1/apps", &alice);
    assert_eq!(
        apps.as_array().map(Vec::len),
        Some(0),
        "nothing stored: {apps}"
    );
}

#[test]
fn a_grant_the_store_refuses_fails_only_its_task_with_a_clear_error() {
    // `gpfs` points at the store serving as `lustre`: it refuses grants made for `gpfs`.
    let site = site_with(|url, secret| {
        format!("[[storage]]\nname = \"gpfs\"\nurl = \"{url}\"\nsecret_file = {secret:?}\n")
    });
    let m = &site.manager;
    let alice = m.create_user("alice");
    place(&site.store.root, "alice", "in.txt", b"hello");
    let _agent = m.agent("local", 2, &[]);
    let submit = |store: &str| {
        let (s, b) = m.http().post(
            "/v1/apps",
            &alice,
            &json!({"name": store, "command": "cat in.txt",
                    "tasks": {"array": {"start": 0, "end": 0}},
                    "inputs": [format!("store://{store}/in.txt")], "max_attempts": 1}),
        );
        assert_eq!(s, 200, "{b}");
        b["app"].as_u64().unwrap()
    };
    let (good, refused) = (submit("lustre"), submit("gpfs"));
    let state = |app: u64| {
        m.wait_finished(app, LONG);
        wait_until("the task's final state", Duration::from_secs(10), || {
            let (_, t) = m.http().get(&format!("/v1/tasks/{app}.0"), &m.admin);
            matches!(t["state"].as_str(), Some("done" | "failed")).then_some(t)
        })
    };
    assert_eq!(state(good)["state"], "done");
    let t = state(refused);
    assert_eq!(t["state"], "failed", "{t}");
    let error = t["last"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("store://gpfs/in.txt")
            && error.contains("401")
            && error.contains("grant refused"),
        "{t}"
    );
}

/// A workflow's per-task `store://` files: the agent holding a task gets a grant to its
/// owner's files on the store that task names, and no other; the task's files are read
/// and written there. Another user's agent (holding only that user's tasks) gets a grant
/// to that user's files only, which the store refuses for the first user's files.
#[test]
fn workflow_tasks_store_files_are_granted_per_task_and_per_owner() {
    let site = site();
    let m = &site.manager;
    let root = &site.store.root;
    let alice = m.create_user("alice");
    place(root, "alice", "wf/in.txt", b"alice's input\n");
    let workflow = |inputs: Value, outputs: Value| {
        json!({
            "name": "wf", "command": "true", "max_attempts": 1,
            "tasks": {"lines": ["copy", "plain", "shout"]},
            "dag": {"tasks": [
                // A store output keeps its path as its name in the run directory.
                {"argv": ["sh", "-c", "mkdir -p wf && cp in.txt wf/mid.txt"],
                 "inputs": inputs, "outputs": outputs},
                {"argv": ["true"]},
                {"parents": [0], "argv": ["sh", "-c", "mkdir -p wf && tr a-z A-Z < mid.txt > wf/out.txt"],
                 "inputs": ["store://lustre/wf/mid.txt"],
                 "outputs": ["store://lustre/wf/out.txt"]}
            ]}
        })
    };
    let alice_wf = workflow(
        json!(["store://lustre/wf/in.txt"]),
        json!(["store://lustre/wf/mid.txt"]),
    );
    // A store the manager does not know, in one task's files, is refused at submit.
    let mut unknown = alice_wf.clone();
    unknown["dag"]["tasks"][1]["inputs"] = json!(["store://gpfs/x"]);
    let (s, b) = m.http().post("/v1/apps", &alice, &unknown);
    assert_eq!(s, 400, "{b}");
    assert!(b["error"].as_str().unwrap().contains("`gpfs`"), "{b}");
    // Through a real agent: each task's store files are staged and stored.
    let agent = m.agent("local", 2, &[]);
    let (s, b) = m.http().post("/v1/apps", &alice, &alice_wf);
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], 3, "{summary}\n{}", agent.log());
    assert_eq!(
        std::fs::read(root.join("alice/wf/out.txt")).unwrap(),
        b"ALICE'S INPUT\n"
    );
    drop(agent);

    // Bob's workflow, pulled by a bare agent: grants follow the tasks it holds.
    let bob = m.create_user("bob");
    place(root, "bob", "wf/in.txt", b"bob's\n");
    let (s, b) = m.http().post(
        "/v1/apps",
        &bob,
        &workflow(json!(["store://lustre/wf/in.txt"]), json!([])),
    );
    assert_eq!(s, 200, "{b}");
    let bob_app = b["app"].as_u64().unwrap();
    let http = m.http();
    let reg = json!({"platform": "local", "hostname": "h", "cores": 1, "memory_mb": 1, "slots": 2});
    let (_, agent) = http.post("/v1/agents", &m.agent_token("local"), &reg);
    let (id, cred) = (
        agent["agent"].as_u64().unwrap(),
        agent["credential"].as_str().unwrap().to_string(),
    );
    let mut pulls: Vec<Value> = Vec::new();
    wait_until("bob's two ready tasks to be leased", LONG, || {
        let have: usize = pulls
            .iter()
            .map(|p| p["tasks"].as_array().unwrap().len())
            .sum();
        if have == 2 {
            return Some(());
        }
        let (s, p) = http.post(
            &format!("/v1/agents/{id}/pull"),
            &cred,
            &json!({"max": 2 - have, "wait_ms": 0}),
        );
        assert_eq!(s, 200, "{p}");
        pulls.push(p);
        None
    });
    let held: Vec<Value> = pulls
        .iter()
        .flat_map(|p| p["tasks"].as_array().unwrap().clone())
        .map(|t| json!({"task": t["task"], "attempt": t["attempt"]}))
        .collect();
    assert!(held.iter().all(|t| t["task"]["app"] == bob_app), "{held:?}");
    let grants: Vec<&Value> = pulls
        .iter()
        .filter_map(|p| p["grants"].as_array())
        .flatten()
        .collect();
    assert_eq!(grants.len(), 1, "one store, one owner: {pulls:?}");
    assert_eq!(
        (grants[0]["store"].as_str(), grants[0]["owner"].as_str()),
        (Some("lustre"), Some("bob"))
    );
    let token = grants[0]["token"].as_str().unwrap();
    let url = &site.store.url;
    assert_eq!(
        store_get(&format!("{url}/bob/wf/in.txt"), Some(token), None),
        (200, b"bob's\n".to_vec())
    );
    for alices in ["alice/wf/in.txt", "alice/wf/out.txt"] {
        let (status, body) = store_get(&format!("{url}/{alices}"), Some(token), None);
        assert_eq!(status, 403, "bob's grant read {alices}: {body:?}");
    }
    // Holding only the task without store files: no grant at all.
    let lease_ms = pulls.iter().map(|p| p["lease_ms"].as_u64().unwrap()).max();
    let plain: Vec<Value> = held
        .iter()
        .filter(|t| t["task"]["index"] == 1)
        .cloned()
        .collect();
    assert_eq!(plain.len(), 1, "{held:?}");
    let (s, b) = http.post(
        &format!("/v1/agents/{id}/heartbeat"),
        &cred,
        &json!({"seen_up_to_ms": lease_ms, "held": plain}),
    );
    assert_eq!(s, 200, "{b}");
    assert!(
        b.get("grants").is_none(),
        "no grant without a task needing one: {b}"
    );
}
