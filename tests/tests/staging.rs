//! Data staging with real transfers on 127.0.0.1: tasks' input files served by the
//! manager's file service and cached once per node, outputs stored back, checksum
//! mismatches and missing files failing only their task, and the file service's access
//! rules. The SFTP test needs the local lab (`deploy/lab/start.sh`).

use hetpilot_e2e::{pattern, wait_until, Manager};
use reqwest::blocking::Client;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

fn put(m: &Manager, token: &str, name: &str, data: &[u8]) {
    let r = Client::new()
        .put(format!("{}/v1/files/{name}", m.url))
        .bearer_auth(token)
        .body(data.to_vec())
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().unwrap());
}

fn get(m: &Manager, token: &str, path: &str, range: Option<&str>) -> (u16, Vec<u8>) {
    let mut req = Client::new()
        .get(format!("{}{path}", m.url))
        .bearer_auth(token);
    if let Some(r) = range {
        req = req.header("range", r);
    }
    let r = req.send().unwrap();
    (r.status().as_u16(), r.bytes().unwrap().to_vec())
}

fn submit(m: &Manager, token: &str, spec: Value) -> u64 {
    let (s, b) = m.http().post("/v1/apps", token, &spec);
    assert_eq!(s, 200, "submit failed: {b}");
    b["app"].as_u64().unwrap()
}

fn file_gets(m: &Manager) -> u64 {
    let (s, b) = m.http().get("/v1/file-stats", &m.admin);
    assert_eq!(s, 200, "{b}");
    b["get_requests"].as_u64().unwrap()
}

/// (bytes fetched, bytes from the cache, bytes uploaded) recorded for the `runs` runs of
/// `app` (polled: the database may trail the in-memory counts by a group commit).
fn staged(m: &Manager, app: u64, runs: i64) -> (i64, i64, i64) {
    wait_until(
        "the staging figures to be stored",
        Duration::from_secs(10),
        || {
            m.db()
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(bytes_fetched), 0), COALESCE(SUM(bytes_cached), 0),
                        COALESCE(SUM(bytes_uploaded), 0)
                 FROM attempt_staging WHERE app_id = ?1",
                [app as i64],
                |r| Ok((r.get::<_, i64>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))),
            )
            .ok()
            .filter(|(n, _)| *n == runs)
            .map(|(_, sums)| sums)
        },
    )
}

/// A task as the store has it (after `wait_finished`, its last run is stored: a result
/// and the task's new state are committed together).
fn task(m: &Manager, app: u64, index: u64) -> Value {
    let (s, b) = m.http().get(&format!("/v1/tasks/{app}.{index}"), &m.admin);
    assert_eq!(s, 200, "{b}");
    b
}

#[test]
fn tasks_sharing_inputs_fetch_each_file_once_per_node_and_store_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    let db = pattern(256 * 1024, 7);
    put(&m, &alice, "db/shared.bin", &db);
    let queries: Vec<Vec<u8>> = (0..4).map(|i| pattern(1000 + i * 10, i as u8)).collect();
    for (i, q) in queries.iter().enumerate() {
        put(&m, &alice, &format!("q/q{i}.fa"), q);
    }
    let sha = hex::encode(Sha256::digest(&db));
    let agent = m.agent("local", 2, &["--cache-max", "10M"]);
    let before = file_gets(&m);
    let app = submit(
        &m,
        &alice,
        json!({
            "name": "blast-like",
            "command": "sh -c 'cat shared.bin {}.fa > out/{}.out'",
            "tasks": {"lines": ["q0", "q1", "q2", "q3"]},
            "inputs": [{"uri": "db/shared.bin", "size": db.len(), "sha256": sha}, "q/{}.fa"],
            "outputs": ["out/{}.out"],
            "max_attempts": 1
        }),
    );
    let summary = m.wait_finished(app, LONG);
    let runs: Vec<Value> = (0..4).map(|i| task(&m, app, i)["last"].clone()).collect();
    assert_eq!(summary["counts"]["done"], 4, "{runs:?}");
    let q_bytes: usize = queries.iter().map(Vec::len).sum();
    let (fetched, cached, uploaded) = staged(&m, app, 4);
    assert_eq!(
        fetched as usize,
        db.len() + q_bytes,
        "the shared file is fetched by one task only"
    );
    assert_eq!(
        cached as usize,
        3 * db.len(),
        "three tasks found it in the cache"
    );
    assert_eq!(uploaded as usize, 4 * db.len() + q_bytes);
    assert_eq!(
        file_gets(&m) - before,
        1 + 4,
        "one GET for the shared file, one per query"
    );
    let transfers: String = m
        .db()
        .query_row(
            "SELECT transfers FROM attempt_staging WHERE app_id = ?1 AND bytes_fetched > 100000",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap();
    let t: Value = serde_json::from_str(&transfers).unwrap();
    assert_eq!(t[0]["endpoint"], "manager");
    assert!(t[0]["mib_per_s"].as_f64().unwrap() > 0.0, "{t}");
    for (i, q) in queries.iter().enumerate() {
        let (s, out) = get(&m, &alice, &format!("/v1/files/out/q{i}.out"), None);
        assert_eq!(s, 200);
        assert_eq!(out, [db.as_slice(), q].concat(), "output of q{i}");
    }
    let runs_dir = agent.work_dir.join(format!("runs/app-{app}"));
    let left: Vec<_> = std::fs::read_dir(&runs_dir)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "run directories are removed: {left:?}");

    // Another application of the same owner reuses the node's cache.
    let before = file_gets(&m);
    let again = submit(
        &m,
        &alice,
        json!({"name": "again", "command": "test -s shared.bin",
               "tasks": {"array": {"start": 1, "end": 2}},
               "inputs": ["db/shared.bin"], "max_attempts": 1}),
    );
    assert_eq!(m.wait_finished(again, LONG)["counts"]["done"], 2);
    let (fetched, cached, _) = staged(&m, again, 2);
    assert_eq!((fetched, cached as usize), (0, 2 * db.len()));
    assert_eq!(file_gets(&m), before, "nothing fetched again");

    // Another user who declares the same name and checksum does not get alice's copy
    // from the node's cache: his own file service has no such file.
    let bob = m.create_user("bob");
    let theirs = submit(
        &m,
        &bob,
        json!({"name": "peek", "command": "cat shared.bin",
               "tasks": {"array": {"start": 1, "end": 1}},
               "inputs": [{"uri": "db/shared.bin", "sha256": sha}], "max_attempts": 1}),
    );
    assert_eq!(m.wait_finished(theirs, LONG)["counts"]["failed"], 1);
    let run = task(&m, theirs, 0)["last"].clone();
    let err = run["error"].as_str().unwrap_or_default();
    assert!(err.contains("not found"), "{run}");
}

#[test]
fn a_cache_smaller_than_the_working_set_evicts_and_every_task_still_completes() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    let common = pattern(100 * 1024, 1);
    put(&m, &alice, "common.bin", &common);
    let parts: Vec<Vec<u8>> = (0..6).map(|i| pattern(100 * 1024, 10 + i)).collect();
    for (i, p) in parts.iter().enumerate() {
        put(&m, &alice, &format!("part{i}.bin"), p);
    }
    // Room for two runs' worth of files at most: runs must wait for each other's files.
    let agent = m.agent("local", 3, &["--cache-max", "250K"]);
    let app = submit(
        &m,
        &alice,
        json!({"name": "pressure", "command": "sh -c 'cat common.bin part{}.bin > r{}.out'",
               "tasks": {"array": {"start": 0, "end": 5}},
               "inputs": [{"uri": "common.bin", "size": common.len()},
                          {"uri": "part{}.bin", "size": parts[0].len()}],
               "outputs": ["r{}.out"], "max_attempts": 1}),
    );
    let summary = m.wait_finished(app, LONG);
    let runs: Vec<Value> = (0..6).map(|i| task(&m, app, i)["last"].clone()).collect();
    assert_eq!(summary["counts"]["done"], 6, "{runs:?}");
    for (i, p) in parts.iter().enumerate() {
        let (s, out) = get(&m, &alice, &format!("/v1/files/r{i}.out"), None);
        assert_eq!(s, 200);
        assert!(out == [common.as_slice(), p].concat(), "output of task {i}");
    }
    let (fetched, _, _) = staged(&m, app, 6);
    assert!(
        fetched as usize >= common.len() + 6 * parts[0].len(),
        "every part fetched: {fetched}"
    );
    let waits = agent.log().matches("node cache full").count();
    eprintln!("runs that released their files to wait for room: {waits}");
}

#[test]
fn a_checksum_mismatch_or_a_missing_file_fails_only_that_task() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    put(&m, &alice, "good.bin", b"good data");
    let mut agent = m.agent("local", 2, &[]);
    let before = file_gets(&m);
    let wrong = "0".repeat(64);
    let bad = submit(
        &m,
        &alice,
        json!({"name": "bad-sum", "command": "cat good.bin", "tasks": {"array": {"start": 1, "end": 1}},
               "inputs": [{"uri": "good.bin", "sha256": wrong}], "max_attempts": 1}),
    );
    let summary = m.wait_finished(bad, LONG);
    assert_eq!(summary["counts"]["failed"], 1, "{summary}");
    assert_eq!(file_gets(&m) - before, 2, "fetched once, then once more");
    let err = task(&m, bad, 0)["last"]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        err.contains("checksum mismatch")
            && err.contains("first fetch")
            && err.contains("good.bin"),
        "{err}"
    );

    let mixed = submit(
        &m,
        &alice,
        json!({"name": "mixed", "command": "cat {}.bin", "tasks": {"lines": ["good", "missing"]},
               "inputs": ["{}.bin"], "max_attempts": 1}),
    );
    let summary = m.wait_finished(mixed, LONG);
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    assert_eq!(summary["counts"]["failed"], 1, "{summary}");
    let err = task(&m, mixed, 1)["last"]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        err.contains("missing.bin") && err.contains("not found"),
        "{err}"
    );
    assert!(
        agent.child.try_wait().unwrap().is_none(),
        "the agent keeps running: {}",
        agent.log()
    );
    // And keeps serving: a later application on the same agent completes.
    let later = submit(
        &m,
        &alice,
        json!({"name": "later", "command": "cat good.bin", "tasks": {"array": {"start": 1, "end": 1}},
               "inputs": ["good.bin"]}),
    );
    assert_eq!(m.wait_finished(later, LONG)["counts"]["done"], 1);
}

#[test]
fn names_escaping_their_root_are_refused_at_submit_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    for (inputs, outputs, field) in [
        (json!(["in/{}"]), json!([]), "inputs"),
        (json!(["ok.txt"]), json!(["/tmp/{}.out"]), "outputs"),
        (json!(["/shared/../etc/passwd"]), json!([]), "inputs"),
    ] {
        let (s, b) = m.http().post(
            "/v1/apps",
            &alice,
            &json!({"name": "x", "command": "cat {}", "tasks": {"lines": ["a", "../../etc/passwd"]},
                    "inputs": inputs, "outputs": outputs}),
        );
        assert_eq!(s, 400, "{b}");
        let msg = b["error"].as_str().unwrap();
        assert!(msg.starts_with(&format!("field `{field}`")), "{msg}");
    }
    let (_, apps) = m.http().get("/v1/apps", &alice);
    assert_eq!(apps.as_array().unwrap().len(), 0, "nothing stored");
}

#[test]
fn the_file_service_serves_ranges_and_only_to_the_files_owner() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    let bob = m.create_user("bob");
    put(&m, &alice, "data/x.txt", b"0123456789");
    assert_eq!(
        get(&m, &alice, "/v1/files/data/x.txt", None),
        (200, b"0123456789".to_vec())
    );
    assert_eq!(
        get(&m, &alice, "/v1/files/data/x.txt", Some("bytes=2-5")),
        (206, b"2345".to_vec())
    );
    assert_eq!(
        get(&m, &alice, "/v1/files/data/x.txt", Some("bytes=7-")),
        (206, b"789".to_vec())
    );
    assert_eq!(
        get(&m, &alice, "/v1/files/data/x.txt", Some("bytes=20-")).0,
        416
    );
    assert_eq!(
        get(&m, &bob, "/v1/files/data/x.txt", None).0,
        404,
        "bob has no such file"
    );
    assert_eq!(get(&m, "", "/v1/files/data/x.txt", None).0, 401);
    assert_eq!(
        get(
            &m,
            &alice,
            "/v1/files/data/..%2F..%2F..%2Fhetpilot.db",
            None
        )
        .0,
        400
    );
    let app = submit(
        &m,
        &alice,
        json!({"name": "a", "command": "true", "tasks": {"array": {"start": 1, "end": 1}}}),
    );
    let path = format!("/v1/apps/{app}/files/data/x.txt");
    assert_eq!(
        get(&m, &alice, &path, None).0,
        200,
        "the owner may use the app route"
    );
    assert_eq!(get(&m, &bob, &path, None).0, 404, "another user may not");
    let registration = m.agent_token("local");
    assert_eq!(get(&m, &registration, &path, None).0, 403);
    assert_eq!(get(&m, &bob, "/v1/file-stats", None).0, 403);
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn sftp_inputs_and_outputs_through_the_lab_sshd() {
    let lab = std::env::var("HETPILOT_LAB").unwrap_or_else(|_| "/var/tmp/hetpilot-lab".into());
    let key = std::path::Path::new(&lab).join("ssh/id_ed25519");
    let up = key.exists() && std::net::TcpStream::connect("127.0.0.1:2222").is_ok();
    assert!(
        up,
        "the lab is not up (no {} or nothing on 127.0.0.1:2222): run deploy/lab/start.sh",
        key.display()
    );
    let remote = tempfile::tempdir().unwrap();
    let data = pattern(100_000, 3);
    std::fs::write(remote.path().join("in.bin"), &data).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_tls(dir.path(), 30.0);
    let alice = m.create_user("alice");
    let known_hosts = std::path::Path::new(&lab).join("ssh/known_hosts");
    let _agent = m.agent(
        "local",
        1,
        &[
            "--sftp-key",
            key.to_str().unwrap(),
            "--known-hosts",
            known_hosts.to_str().unwrap(),
        ],
    );
    let base = format!("sftp://root@127.0.0.1:2222{}", remote.path().display());
    let app = submit(
        &m,
        &alice,
        json!({"name": "sftp", "command": "cp in.bin copy-{}.bin", "tasks": {"array": {"start": 1, "end": 2}},
               "inputs": [format!("{base}/in.bin")], "outputs": [format!("{base}/copy-{{}}.bin")],
               "max_attempts": 1}),
    );
    let summary = m.wait_finished(app, LONG);
    assert_eq!(
        summary["counts"]["done"],
        2,
        "{summary} {}",
        task(&m, app, 0)
    );
    for i in 1..=2 {
        let copy = remote.path().join(format!("copy-{i}.bin"));
        assert_eq!(std::fs::read(&copy).unwrap(), data, "{}", copy.display());
    }
    let (fetched, cached, _) = staged(&m, app, 2);
    assert_eq!(
        (fetched as usize, cached as usize),
        (data.len(), data.len())
    );
}

/// Bytes fetched by the 16 tasks of a batch whose 4 groups each read their own 3 files of
/// 256 KiB, queued interleaved (each group's tasks spread over the queue), and how many
/// (group, agent) pairs ran (4: each group on one agent).
fn grouped_batch_fetched(
    m: &Manager,
    token: &str,
    prefix: &str,
    data_intensive: bool,
) -> (i64, usize) {
    let seed = if data_intensive { 100 } else { 0 };
    for g in 0..4u8 {
        for k in 0..3u8 {
            let data = pattern(256 * 1024, seed + g * 3 + k);
            put(m, token, &format!("{prefix}/g{g}/f{k}.bin"), &data);
        }
    }
    let lines: Vec<String> = (0..16).map(|i| format!("g{}", (i + i / 4) % 4)).collect();
    let app = submit(
        m,
        token,
        json!({
            "name": prefix,
            "command": "sleep 0.3",
            "tasks": {"lines": lines},
            "inputs": [
                format!("{prefix}/{{}}/f0.bin"),
                format!("{prefix}/{{}}/f1.bin"),
                format!("{prefix}/{{}}/f2.bin")
            ],
            "max_attempts": 1,
            "data_intensive": data_intensive
        }),
    );
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], 16, "{summary}");
    let fetched = staged(m, app, 16).0;
    let db = m.db();
    let mut q = db
        .prepare("SELECT idx, agent_id FROM attempts WHERE app_id = ?1")
        .unwrap();
    let pairs: std::collections::HashSet<(i64, i64)> = q
        .query_map([app as i64], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })
        .unwrap()
        .map(|row| {
            let (i, agent) = row.unwrap();
            ((i + i / 4) % 4, agent)
        })
        .collect();
    (fetched, pairs.len())
}

#[test]
fn het_hps_moves_fewer_bytes_than_fifo_on_a_high_overlap_batch() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    let args = ["--prefetch", "0", "--cache-max", "100M"];
    let _agents = [m.agent("local", 1, &args), m.agent("local", 1, &args)];
    wait_until("both agents to register", LONG, || {
        let n: i64 = m
            .db()
            .query_row("SELECT COUNT(*) FROM agents", [], |r| r.get(0))
            .ok()?;
        (n == 2).then_some(())
    });
    let distinct = 12 * 256 * 1024;
    let (fifo, fifo_pairs) = grouped_batch_fetched(&m, &alice, "fifo", false);
    let (het, het_pairs) = grouped_batch_fetched(&m, &alice, "het", true);
    eprintln!("bytes fetched: fifo {fifo}, het-hps {het}, distinct files {distinct}");
    eprintln!("(group, agent) pairs: fifo {fifo_pairs}, het-hps {het_pairs}");
    assert!(het_pairs < fifo_pairs, "het-hps keeps groups together");
    assert!(
        het >= distinct,
        "every file is fetched at least once: {het}"
    );
    assert!(
        het * 4 < fifo * 3,
        "het-hps fetched {het} bytes, fifo {fifo}: expected at least 25% fewer"
    );
    // The plan's prediction is beside the bytes moved (`GET /v1/staging`): each group's
    // three files once, on the agent the group went to. (A plan made for a changed agent
    // set adds its own prediction: at least the distinct bytes, never more than every
    // task fetching its files.)
    let (s, rows) = m.http().get("/v1/staging", &alice);
    assert_eq!(s, 200, "{rows}");
    let planned = rows[0]["planned"].as_u64().unwrap();
    assert!(
        planned >= distinct as u64 && planned <= 16 * 3 * 256 * 1024,
        "{rows}"
    );
    assert_eq!(rows[0]["platform"], "local", "{rows}");
}

/// The `hetpilot bandwidths` rows, as JSON.
fn bandwidths(m: &Manager) -> Vec<Value> {
    let out = m.cli(&["bandwidths", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn measured_bandwidths_are_kept_per_platform_and_endpoint_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let port = hetpilot_e2e::free_port();
    let mut m = Manager::start_on(dir.path(), port, 30.0, &[]);
    let alice = m.create_user("alice");
    for i in 0..6u8 {
        put(&m, &alice, &format!("bw/f{i}.bin"), &pattern(512 * 1024, i));
    }
    let _agent = m.agent("local", 2, &["--cache-max", "100M"]);
    let app = submit(
        &m,
        &alice,
        json!({
            "name": "bw",
            "command": "true",
            "tasks": {"lines": (0..6).map(|i| format!("f{i}")).collect::<Vec<_>>()},
            "inputs": ["bw/{}.bin"],
            "max_attempts": 1
        }),
    );
    let summary = m.wait_finished(app, LONG);
    assert_eq!(summary["counts"]["done"], 6, "{summary}");
    staged(&m, app, 6);
    // Every run fetched its own 512 KiB file from the file service: each one is a
    // transfer big enough to measure.
    let measured: i64 = m
        .db()
        .query_row(
            "SELECT COUNT(*) FROM attempt_staging WHERE app_id = ?1 AND bytes_fetched >= 65536",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(measured, 6);
    let before = bandwidths(&m);
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["platform"], "local");
    assert_eq!(before[0]["endpoint"], "manager");
    assert_eq!(before[0]["transfers"], 6);
    assert_eq!(before[0]["window_bytes"], 6 * 512 * 1024);
    assert!(before[0]["mib_per_s"].as_f64().unwrap() > 0.0, "{before:?}");

    // A user can read them (they describe platforms); no token gets 401.
    let (s, _) = m.http().get("/v1/bandwidths", &alice);
    assert_eq!(s, 200);
    let (s, _) = m.http().get("/v1/bandwidths", "nope");
    assert_eq!(s, 401);

    m.kill();
    let m = Manager::start_on(dir.path(), port, 30.0, &[]);
    let after = bandwidths(&m);
    assert_eq!(after.len(), 1, "{after:?}");
    for key in ["platform", "endpoint", "transfers", "window_bytes"] {
        assert_eq!(after[0][key], before[0][key], "{key}");
    }
    let (a, b) = (
        after[0]["mib_per_s"].as_f64().unwrap(),
        before[0]["mib_per_s"].as_f64().unwrap(),
    );
    assert!(
        (a - b).abs() <= 1e-9 * b,
        "rebuilt {a} MiB/s, live {b} MiB/s"
    );
}
