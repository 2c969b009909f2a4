//! What a manager keeps of ended applications, against a real manager: submit-and-cancel
//! churn stops at the stored-task quota until applications are forgotten (`hetpilot app
//! forget`, `hetpilot purge`), forgotten applications stay gone after a restart, and NUL
//! bytes in what makes a task's process are refused at submit in every form. (The
//! manager's memory per live and per ended task is measured by the `manager_memory` bench.)

use hetpilot_e2e::{array_app, bin, Manager};
use serde_json::{json, Value};
use std::process::{Command, Output};

/// Runs the `hetpilot` CLI against `m` with `token`.
fn cli_as(m: &Manager, token: &str, args: &[&str]) -> Output {
    Command::new(bin("hetpilot"))
        .args(args)
        .env_remove("HETPILOT_CONFIG")
        .env("HETPILOT_URL", &m.url)
        .env("HETPILOT_TOKEN", token)
        .output()
        .expect("running the hetpilot CLI")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn submit(m: &Manager, token: &str, spec: &Value) -> (u16, Value) {
    m.http().post("/v1/apps", token, spec)
}

fn app_ids(m: &Manager, token: &str) -> Vec<u64> {
    let (s, apps) = m.http().get("/v1/apps", token);
    assert_eq!(s, 200, "{apps}");
    apps.as_array()
        .unwrap()
        .iter()
        .map(|a| a["app"].as_u64().unwrap())
        .collect()
}

fn stored_rows(m: &Manager, app: u64) -> i64 {
    m.db()
        .query_row(
            "SELECT (SELECT COUNT(*) FROM apps WHERE id = ?1)
                  + (SELECT COUNT(*) FROM tasks WHERE app_id = ?1)",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap()
}

const QUOTA: [(&str, &str); 1] = [("HETPILOT_QUOTAS__STORED_TASKS_PER_USER", "10")];

#[test]
fn submit_and_cancel_churn_stops_at_the_stored_task_quota_until_applications_are_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Manager::start_on(dir.path(), hetpilot_e2e::free_port(), 30.0, &QUOTA);
    let http = m.http();
    let alice = m.create_user("alice");
    let bob = m.create_user("bob");
    // No agent runs: every task waits until its application is cancelled.
    let mut cancelled = Vec::new();
    let refusal = loop {
        let (s, b) = submit(&m, &alice, &array_app("churn", "true", 4));
        if s != 200 {
            break (s, b);
        }
        let app = b["app"].as_u64().unwrap();
        let (s, b) = http.post(&format!("/v1/apps/{app}/cancel"), &alice, &json!({}));
        assert_eq!(s, 200, "{b}");
        cancelled.push(app);
        assert!(cancelled.len() <= 2, "churn was never refused");
    };
    let (s, b) = refusal;
    assert_eq!(s, 403, "{b}");
    let error = b["error"].as_str().unwrap();
    assert!(
        error.contains("quotas.stored_tasks_per_user") && error.contains("hetpilot app forget"),
        "{error}"
    );
    assert_eq!(cancelled.len(), 2, "8 tasks kept; 4 more would pass 10");

    // Another user's application looks missing; a live one is refused; an ended one goes.
    let first = cancelled[0].to_string();
    let (s, b) = http.post(&format!("/v1/apps/{first}/forget"), &bob, &json!({}));
    assert_eq!(s, 404, "{b}");
    let out = cli_as(&m, &alice, &["app", "forget", &first]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("application {first} forgotten (4 tasks)")),
        "{}",
        text(&out)
    );
    let (s, b) = submit(&m, &alice, &array_app("after", "true", 4));
    assert_eq!(s, 200, "forgetting freed room: {b}");
    let live = b["app"].as_u64().unwrap();
    let out = cli_as(&m, &alice, &["app", "forget", &live.to_string()]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("cancel it first") && text(&out).contains("HTTP 409"),
        "{}",
        text(&out)
    );
    let out = cli_as(&m, &alice, &["app", "forget", "424242"]);
    assert!(text(&out).contains("HTTP 404"), "{}", text(&out));

    // Forgotten applications stay gone after a restart, in memory and in the store.
    m.kill();
    let m = Manager::start_on(dir.path(), m.port, 30.0, &QUOTA);
    assert_eq!(app_ids(&m, &alice), [cancelled[1], live]);
    assert_eq!(stored_rows(&m, cancelled[0]), 0);
    // Ids of forgotten applications are not given again.
    let (s, b) = submit(&m, &m.admin, &array_app("next", "true", 1));
    assert_eq!(s, 200, "{b}");
    assert!(b["app"].as_u64().unwrap() > live, "{b}");

    // Purge (admin): every ended application, whoever owns it.
    let out = cli_as(&m, &alice, &["purge", "--older-than", "0s"]);
    assert!(text(&out).contains("HTTP 403"), "{}", text(&out));
    let out = m.cli(&["purge", "--older-than", "1h"]);
    assert!(
        text(&out).contains("0 applications forgotten"),
        "{}",
        text(&out)
    );
    let out = m.cli(&["purge", "--older-than", "0s"]);
    assert!(
        text(&out).contains("1 applications forgotten (4 tasks)"),
        "{}",
        text(&out)
    );
    assert_eq!(stored_rows(&m, cancelled[1]), 0);
    assert_eq!(app_ids(&m, &alice), [live]);
    for bad in ["-1s", "soon", "NaN"] {
        let out = m.cli(&["purge", "--older-than", bad]);
        assert!(!out.status.success(), "{bad}: {}", text(&out));
    }
    let (s, b) = http_purge(&m, json!({"older_than_secs": -1}));
    assert_eq!(s, 422, "{b}");
    assert!(b.to_string().contains("older_than_secs"), "{b}");
    let (s, b) = http_purge(&m, json!({"older_than_secs": u64::MAX}));
    assert_eq!(s, 400, "{b}");
    assert!(
        b["error"].as_str().unwrap().contains("older_than_secs"),
        "{b}"
    );
}

fn http_purge(m: &Manager, body: Value) -> (u16, Value) {
    m.http().post("/v1/admin/purge", &m.admin, &body)
}

#[test]
fn a_nul_byte_in_what_makes_a_tasks_process_is_refused_at_submit_in_every_form() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let nul_command = array_app("a", "echo a\u{0}b", 2);
    let lines = json!({"name": "l", "command": "echo {}", "tasks": {"lines": ["x", "y\u{0}"]}});
    let env = json!({"name": "e", "command": "true", "tasks": {"array": {"start": 0, "end": 0}},
        "env": {"GREETING": "hi\u{0}"}});
    let params = json!({"name": "p", "command": "echo {x}",
        "tasks": {"params": [{"x": "1"}, {"x": "2\u{0}"}]}});
    let workflow = json!({"name": "w", "command": "run\u{0} {}", "tasks": {"lines": ["t0", "t1"]},
        "dag": {"tasks": [{}, {"parents": [0]}]}});
    let workflow_argv = json!({"name": "w", "command": "run {}", "tasks": {"lines": ["t0"]},
        "dag": {"tasks": [{"argv": ["echo", "a\u{0}"]}]}});
    for (spec, field) in [
        (nul_command, "command"),
        (lines, "tasks"),
        (env, "env"),
        (params, "params"),
        (workflow, "command"),
        (workflow_argv, "command"),
    ] {
        let (s, b) = submit(&m, &m.admin, &spec);
        assert_eq!(s, 400, "{spec}: {b}");
        let error = b["error"].as_str().unwrap();
        assert!(
            error.starts_with(&format!("field `{field}`")) && error.contains("NUL"),
            "{spec}: {error}"
        );
    }
    assert!(app_ids(&m, &m.admin).is_empty(), "nothing was stored");
    // An application file says it before anything reaches the manager.
    let file = dir.path().join("app.toml");
    std::fs::write(
        &file,
        "command = \"echo \\u0000\"\n[tasks]\narray = \"1-2\"\n",
    )
    .unwrap();
    let out = m.cli(&["submit", &file.display().to_string()]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("command") && text(&out).contains("NUL"),
        "{}",
        text(&out)
    );
}
