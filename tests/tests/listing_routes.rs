//! Every listing route bounds its page and goes on from a cursor, so the CLI's `--json`
//! (and the dashboard) read every row a page at a time: `GET /v1/apps`, `/v1/agents`,
//! `/v1/pilots`, `/v1/usage`, `/v1/bandwidths`, `/v1/agent-tokens`. `/v1/platforms`, one
//! row per configured platform, is answered whole.

use hetpilot_e2e::lab::{configure, local_profile, start_manager};
use hetpilot_e2e::{array_app, Manager};
use serde_json::Value;

/// The routes, with the field each row's cursor is made of.
const ROUTES: [&str; 6] = [
    "/v1/apps",
    "/v1/agents",
    "/v1/pilots",
    "/v1/usage",
    "/v1/bandwidths",
    "/v1/agent-tokens",
];

/// The cursor of a row of `route`, as the CLI writes it.
fn cursor(route: &str, row: &Value) -> String {
    match route {
        "/v1/apps" => row["app"].to_string(),
        "/v1/agents" => row["agent"].to_string(),
        "/v1/usage" => row["user"].as_str().unwrap().to_string(),
        "/v1/agent-tokens" => serde_json::json!([row["created_at_ms"], row["id"]]).to_string(),
        other => panic!("no rows expected on {other}"),
    }
}

fn get(m: &Manager, path: &str) -> Value {
    let (s, body) = m.http().get(path, &m.admin);
    assert_eq!(s, 200, "{path}: {body}");
    body
}

/// Walks `route` one row a page; returns the rows in the order the pages gave them.
fn walk(m: &Manager, route: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut path = format!("{route}?limit=1");
    loop {
        let page = get(m, &path);
        let page = page.as_array().unwrap();
        assert!(page.len() <= 1, "{route}: a page of limit 1 held {page:?}");
        let Some(row) = page.first() else {
            return rows;
        };
        rows.push(row.clone());
        assert!(rows.len() < 100, "{route} never ends");
        let after = cursor(route, row);
        let after: String = url::form_urlencoded::byte_serialize(after.as_bytes()).collect();
        path = format!("{route}?limit=1&after={after}");
    }
}

#[test]
fn every_listing_route_bounds_its_page_and_goes_on_after_a_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    let bob = m.create_user("bob");
    for token in [&alice, &bob, &alice] {
        let (s, b) = m.http().post("/v1/apps", token, &array_app("a", "true", 1));
        assert_eq!(s, 200, "{b}");
    }
    for _ in 0..3 {
        let token = m.agent_token("local");
        let reg = serde_json::json!({"platform": "local", "hostname": "h", "cores": 1,
                                     "memory_mb": 100});
        let (s, b) = m.http().post("/v1/agents", &token, &reg);
        assert_eq!(s, 200, "{b}");
    }
    for route in ROUTES {
        for limit in ["0", "100001", "-1"] {
            let (s, body) = m.http().get(&format!("{route}?limit={limit}"), &m.admin);
            assert_eq!(s, 400, "{route}?limit={limit}: {body}");
            assert!(body.to_string().contains("limit"), "{route}: {body}");
        }
        let whole = get(&m, &format!("{route}?limit=100000"));
        if route == "/v1/pilots" || route == "/v1/bandwidths" {
            assert_eq!(whole, Value::Array(vec![]), "{route}");
            continue;
        }
        let whole = whole.as_array().unwrap().clone();
        assert_eq!(
            walk(&m, route),
            whole,
            "{route}: the pages add up to the whole"
        );
        let (s, body) = m.http().get(&format!("{route}?after=%5Bjunk"), &m.admin);
        if route == "/v1/usage" {
            // Any text is a user name: past the names sorted before it.
            assert_eq!(s, 200, "{body}");
        } else {
            assert_eq!(s, 400, "{route}: {body}");
            assert!(body.to_string().contains("`after`"), "{route}: {body}");
        }
    }
    let count = |route: &str| get(&m, route).as_array().unwrap().len();
    assert_eq!(count("/v1/apps"), 3);
    assert_eq!(count("/v1/agents"), 3);
    assert_eq!(count("/v1/usage"), 2, "alice and bob");
    // Three agents' tokens and the test's own.
    assert!(count("/v1/agent-tokens") >= 3);
    // A user's page of applications holds only theirs.
    let (s, hers) = m.http().get("/v1/apps?limit=1&after=0", &alice);
    assert_eq!(s, 200, "{hers}");
    assert_eq!(hers.as_array().unwrap().len(), 1, "{hers}");
}

/// More than one page of the CLI's 1,000-row requests.
const TOKENS: usize = 1_203;

#[test]
fn token_list_json_and_table_hold_every_row_of_many_pages() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    for _ in 0..TOKENS {
        m.agent_token("local");
    }
    let out = m.cli(&["token", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), TOKENS, "every token");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), TOKENS, "each once");
    let out = m.cli(&["token", "list"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().lines().count(),
        1 + TOKENS,
        "the header and every token"
    );
}

/// `/v1/platforms` is as long as the configuration's platform list, and whole.
#[test]
fn platforms_status_lists_every_configured_platform() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["p1", "p2", "p3", "p4", "p5"];
    let profiles: Vec<_> = names
        .iter()
        .map(|n| local_profile(dir.path(), n, 1, "max_queued = 1\nmax_running = 1"))
        .collect();
    let platforms: Vec<(&str, &std::path::Path)> = names
        .iter()
        .zip(&profiles)
        .map(|(n, p)| (*n, p.as_path()))
        .collect();
    let env = configure(dir.path(), &platforms, "");
    let m = start_manager(dir.path(), &env);
    let out = m.cli(&["platforms", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut listed: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    listed.sort_unstable();
    assert_eq!(listed, names);
}
