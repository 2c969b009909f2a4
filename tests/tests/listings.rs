//! Listings are whole where a program reads them: `hetpilot tasks --json` lists every task,
//! fetched in bounded pages; cut short by `--limit`, it prints an object that says so and
//! how to go on; a cut table says on its last line how many rows it left out. The API
//! bounds a page and goes on from a cursor.

use hetpilot_e2e::{array_app, Manager};
use serde_json::Value;

/// More than two pages of the CLI's 1,000-row requests.
const TASKS: u64 = 2_345;

fn json(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn indexes(rows: &Value) -> Vec<u64> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|t| t["task"]["index"].as_u64().unwrap())
        .collect()
}

#[test]
fn tasks_json_lists_every_task_and_a_cut_listing_says_how_to_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    // No agent: every task stays waiting.
    let app = m.submit(array_app("many", "true", TASKS)).to_string();

    let all = json(&m.cli(&["tasks", &app, "--json"]));
    assert_eq!(
        indexes(&all),
        (0..TASKS).collect::<Vec<_>>(),
        "every task, in order"
    );
    let waiting = json(&m.cli(&["tasks", &app, "--json", "--state", "waiting"]));
    assert_eq!(waiting.as_array().unwrap().len() as u64, TASKS);

    // Cut by --limit: an object no reader of an array can take for the whole.
    let cut = json(&m.cli(&["tasks", &app, "--json", "--limit", "1000"]));
    assert_eq!(cut["partial"], true, "{}", cut["next"]);
    assert_eq!(indexes(&cut["rows"]), (0..1000).collect::<Vec<_>>());
    assert_eq!(cut["after"], 999);
    let next = cut["next"].as_str().unwrap();
    assert_eq!(next, format!("hetpilot tasks {app} --json --after 999"));
    let args: Vec<&str> = next.split(' ').skip(1).collect();
    let rest = json(&m.cli(&args));
    assert_eq!(indexes(&rest), (1000..TASKS).collect::<Vec<_>>());
    // A limit that cuts nothing prints the plain array.
    let whole = json(&m.cli(&["tasks", &app, "--json", "--limit", "5000"]));
    assert_eq!(whole.as_array().unwrap().len() as u64, TASKS);

    // The table shows 100 and says how many it left out; --all shows every one.
    let out = m.cli(&["tasks", &app]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 100 + 1, "header, 100 rows, the last line");
    assert_eq!(
        *lines.last().unwrap(),
        format!(
            "… {} more; use --limit N, --all, or --after 99",
            TASKS - 100
        )
    );
    let out = m.cli(&["tasks", &app, "--all"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().count() as u64,
        1 + TASKS,
        "header and every task"
    );
    assert!(!text.contains("more; use"), "nothing left out");
}

#[test]
fn the_tasks_route_bounds_its_page_and_goes_on_after_a_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let app = m.submit(array_app("few", "true", 10));
    let http = m.http();
    for limit in ["0", "100001"] {
        let (s, body) = http.get(&format!("/v1/apps/{app}/tasks?limit={limit}"), &m.admin);
        assert_eq!(s, 400, "{body}");
        assert!(body.to_string().contains("field `limit`"), "{body}");
    }
    let (s, page) = http.get(&format!("/v1/apps/{app}/tasks?limit=3&after=4"), &m.admin);
    assert_eq!(s, 200, "{page}");
    assert_eq!(indexes(&page), vec![5, 6, 7]);
    let (s, page) = http.get(
        &format!("/v1/apps/{app}/tasks?after={}", u64::MAX),
        &m.admin,
    );
    assert_eq!((s, page), (200, Value::Array(vec![])), "past every task");
    let (s, body) = http.get(&format!("/v1/apps/{app}/tasks?after=-1"), &m.admin);
    assert_eq!(s, 400, "{body}");
}
