//! Live scheduling on real agents: the allocation follows measured platform affinity, and
//! fairshare usage is accounted per user, private to each user, and survives a restart.

use hetpilot_e2e::{array_app, free_port, wait_until, Manager};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

/// A manager with platforms `fast` and `slow` and quick scheduling rounds.
fn start(dir: &Path, port: u16) -> Manager {
    let config = dir.join("hetpilot.toml");
    std::fs::write(
        &config,
        "[[platforms]]\nname = \"fast\"\n[[platforms]]\nname = \"slow\"\n\
         [scheduler]\ninterval_ms = 100\n",
    )
    .unwrap();
    Manager::start_on(
        dir,
        port,
        30.0,
        &[("HETPILOT_CONFIG", config.to_str().unwrap())],
    )
}

/// Successful runs of `app` per platform.
fn ran_on(m: &Manager, app: u64, platform: &str) -> i64 {
    m.db()
        .query_row(
            "SELECT COUNT(*) FROM attempts a JOIN agents g ON g.id = a.agent_id
             WHERE a.app_id = ?1 AND a.outcome = 'success' AND g.platform = ?2",
            rusqlite::params![app as i64, platform],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn the_allocation_follows_measured_platform_affinity() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), free_port());
    let _fast = m.agent("fast", 2, &[]);
    let slow = m.agent("slow", 2, &[]);
    // Tasks run in their agent's work directory: this marker makes "cpu" 6× slower there.
    std::fs::write(slow.work_dir.join("slow.marker"), "").unwrap();
    // io first: without measurements, ties would give the first application `fast`.
    let io = m.submit(array_app("io", "sleep 0.2", 40));
    let cpu = m.submit(array_app(
        "cpu",
        "sh -c 'if [ -e slow.marker ]; then sleep 0.6; else sleep 0.1; fi'",
        60,
    ));
    let http = m.http();
    let view = wait_until("an allocation by affinity", LONG, || {
        let (s, v) = http.get("/v1/schedule", &m.admin);
        assert_eq!(s, 200, "{v}");
        let row = |app: u64| v["apps"].as_array()?.iter().find(|a| a["app"] == app);
        let cores = |app: u64| Some(row(app)?["cores"].clone());
        // Measured on both platforms (exploration), so the allocation rests on data.
        let measured = |app: u64| {
            row(app).is_some_and(|r| r["samples"].as_array().unwrap().iter().all(|n| n != 0))
        };
        if !(measured(cpu) && measured(io)) {
            return None;
        }
        let names: Vec<&str> = v["platforms"]
            .as_array()?
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        (names == ["fast", "slow"] && cores(cpu)? == json!([2, 0]) && cores(io)? == json!([0, 2]))
            .then_some(v)
    });
    assert!(
        view["policy"].as_str().unwrap().starts_with("pa-rr(rpa"),
        "{view}"
    );
    assert!(view["platforms"][0]["speed"].as_f64() > view["platforms"][1]["speed"].as_f64());
    // Wait for the store, which records a report just after the queues count it.
    let [cpu_fast, cpu_slow, io_fast, io_slow] = wait_until("every run recorded", LONG, || {
        let n = [(cpu, "fast"), (cpu, "slow"), (io, "fast"), (io, "slow")]
            .map(|(app, platform)| ran_on(&m, app, platform));
        (n[0] + n[1] == 60 && n[2] + n[3] == 40).then_some(n)
    });
    // Served round-robin instead, this ran cpu 44 / 16 and io 28 / 12 (fast / slow).
    assert!(
        cpu_fast >= 45,
        "cpu ran {cpu_fast} on fast, {cpu_slow} on slow"
    );
    assert!(
        io_slow > io_fast,
        "io ran {io_fast} on fast, {io_slow} on slow"
    );
    let out = m.cli(&["schedule"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("pa-rr"));
}

/// `GET /v1/usage` as `token`.
fn usage(m: &Manager, token: &str) -> Vec<Value> {
    let (s, v) = m.http().get("/v1/usage", token);
    assert_eq!(s, 200, "{v}");
    v.as_array().unwrap().clone()
}

#[test]
fn usage_is_accounted_per_user_private_and_rebuilt_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut m = start(dir.path(), port);
    let http = m.http();
    let token = |name: &str| {
        let (s, b) = http.post("/v1/users", &m.admin, &json!({"name": name}));
        assert_eq!(s, 200, "{b}");
        b["token"].as_str().unwrap().to_string()
    };
    let (heavy, light) = (token("heavy"), token("light"));
    let _agent = m.agent("fast", 4, &[]);
    let mut apps = Vec::new();
    for (user, spec) in [
        (&heavy, array_app("long", "sleep 0.5", 8)),
        (&light, array_app("short", "true", 4)),
    ] {
        let (s, b) = http.post("/v1/apps", user, &spec);
        assert_eq!(s, 200, "{b}");
        apps.push(b["app"].as_u64().unwrap());
    }
    for app in &apps {
        m.wait_finished(*app, LONG);
    }
    let all = usage(&m, &m.admin);
    let row = |rows: &[Value], user: &str| rows.iter().find(|r| r["user"] == user).cloned();
    let (h, l) = (row(&all, "heavy").unwrap(), row(&all, "light").unwrap());
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap();
    assert!(f(&h, "usage") >= 4.0, "8 × 0.5 core-seconds at least: {h}");
    assert!(f(&h, "usage") > 4.0 * f(&l, "usage"), "{h} vs {l}");
    assert!(f(&h, "priority") < f(&l, "priority"));
    // The API pages by name; the table puts the user served first on top.
    let order: Vec<&str> = all.iter().filter_map(|r| r["user"].as_str()).collect();
    assert_eq!(order, ["heavy", "light"]);
    let out = m.cli(&["usage"]);
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = table
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|u| ["heavy", "light"].contains(u))
        .collect();
    assert_eq!(rows, ["light", "heavy"], "{table}");
    // Each user sees their own row only.
    let mine = usage(&m, &light);
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0]["user"], "light");
    assert_eq!(usage(&m, &heavy)[0]["user"], "heavy");
    let (s, _) = m.http().get("/v1/usage", "");
    assert_eq!(s, 401);
    let out = m.cli(&["usage", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(row(listed.as_array().unwrap(), "heavy").is_some());

    // The ledger is rebuilt from the stored runs.
    m.kill();
    let m = start(dir.path(), port);
    let again = usage(&m, &m.admin);
    let h2 = row(&again, "heavy").unwrap();
    assert!(
        (f(&h2, "usage") - f(&h, "usage")).abs() < 1e-6,
        "{h2} vs {h}"
    );
}

#[test]
fn multi_core_tasks_run_only_where_their_cores_are_free() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), free_port());
    let _small = m.agent("slow", 1, &[]);
    let _big = m.agent("fast", 4, &[]);
    let mut wide = array_app("wide", "sleep 0.2", 6);
    wide["cores"] = json!(2);
    let wide = m.submit(wide);
    let narrow = m.submit(array_app("narrow", "sleep 0.05", 20));
    m.wait_finished(wide, LONG);
    m.wait_finished(narrow, LONG);
    let runs = wait_until("every run recorded", LONG, || {
        let n = ran_on(&m, wide, "fast");
        (n == 6).then_some(n)
    });
    // The 1-slot agent asks for tasks (its slot, then prefetch) but has 1 free slot.
    assert_eq!(runs, 6, "a 2-core task never goes to the 1-slot agent");
    // At most two 2-core tasks at once on the 4-slot agent.
    let most: i64 = m
        .db()
        .query_row(
            "SELECT MAX((SELECT COUNT(*) FROM attempts b WHERE b.app_id = a.app_id
                 AND b.started_ms <= a.started_ms AND b.ended_ms > a.started_ms))
             FROM attempts a WHERE a.app_id = ?1",
            [wide as i64],
            |r| r.get(0),
        )
        .unwrap();
    assert!(most <= 2, "{most} concurrent 2-core runs on 4 slots");
}
