//! Authentication, visibility, oversized and foreign requests against a real manager.

use hetpilot_e2e::{array_app, Manager};
use serde_json::json;

#[test]
fn every_call_but_health_needs_a_valid_token() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    assert_eq!(http.get("/v1/health", "").0, 200);
    assert_eq!(http.get("/v1/apps", "").0, 401);
    assert_eq!(http.get("/v1/apps", "hpu_wrong").0, 401);
    assert_eq!(http.post("/v1/apps", "", &array_app("a", "true", 1)).0, 401);
    assert_eq!(
        http.post("/v1/agents/1/pull", "", &json!({"max": 1, "wait_ms": 0}))
            .0,
        401
    );
    assert_eq!(http.get("/v1/apps", &m.admin).0, 200);
    let mode = std::fs::metadata(dir.path().join("admin.token")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
}

#[test]
fn users_see_only_their_own_applications() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let token = |name: &str| {
        let (s, b) = http.post("/v1/users", &m.admin, &json!({"name": name}));
        assert_eq!(s, 200, "{b}");
        b["token"].as_str().unwrap().to_string()
    };
    let (alice, bob) = (token("alice"), token("bob"));
    let (s, b) = http.post("/v1/apps", &alice, &array_app("mine", "true", 3));
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    assert_eq!(http.get("/v1/apps", &alice).1.as_array().unwrap().len(), 1);
    assert_eq!(http.get("/v1/apps", &bob).1.as_array().unwrap().len(), 0);
    assert_eq!(http.get(&format!("/v1/apps/{app}"), &bob).0, 404);
    assert_eq!(http.get(&format!("/v1/apps/{app}/tasks"), &bob).0, 404);
    assert_eq!(
        http.post(&format!("/v1/apps/{app}/cancel"), &bob, &json!({}))
            .0,
        404
    );
    assert_eq!(http.get(&format!("/v1/tasks/{app}.0"), &bob).0, 404);
    assert_eq!(
        http.get(&format!("/v1/apps/{app}"), &m.admin).0,
        200,
        "admins see everything"
    );
    // Users cannot act as admins or agents.
    assert_eq!(
        http.post("/v1/users", &alice, &json!({"name": "mallory"}))
            .0,
        403
    );
    assert_eq!(
        http.post("/v1/agent-tokens", &alice, &json!({"platform": "local"}))
            .0,
        403
    );
    assert_eq!(
        http.post(
            "/v1/agents/1/pull",
            &alice,
            &json!({"max": 1, "wait_ms": 0})
        )
        .0,
        403
    );
    let reg = json!({"platform": "local", "hostname": "h", "cores": 1, "memory_mb": 1});
    assert_eq!(http.post("/v1/agents", &alice, &reg).0, 403);
}

#[test]
fn agents_need_a_registration_token_for_a_known_platform_and_their_own_credential() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let (s, b) = http.post(
        "/v1/agent-tokens",
        &m.admin,
        &json!({"platform": "nowhere"}),
    );
    assert_eq!(s, 400);
    assert!(
        b["error"]
            .as_str()
            .unwrap()
            .contains("unknown platform `nowhere`"),
        "{b}"
    );
    let reg_token = m.agent_token("local");
    let reg = |platform: &str| json!({"platform": platform, "hostname": "h", "cores": 2, "memory_mb": 100});
    let (s, b) = http.post("/v1/agents", &reg_token, &reg("other"));
    assert_eq!(s, 400, "{b}");
    let (s, one) = http.post("/v1/agents", &reg_token, &reg("local"));
    assert_eq!(s, 200, "{one}");
    let (_, two) = http.post("/v1/agents", &reg_token, &reg("local"));
    let (id1, cred1) = (
        one["agent"].as_u64().unwrap(),
        one["credential"].as_str().unwrap(),
    );
    let id2 = two["agent"].as_u64().unwrap();
    // The registration token is not an agent credential, and credentials are per agent.
    assert_eq!(
        http.post(
            &format!("/v1/agents/{id1}/pull"),
            &reg_token,
            &json!({"max": 1, "wait_ms": 0})
        )
        .0,
        403
    );
    assert_eq!(
        http.post(
            &format!("/v1/agents/{id2}/pull"),
            cred1,
            &json!({"max": 1, "wait_ms": 0})
        )
        .0,
        403
    );
    assert_eq!(http.get("/v1/apps", cred1).0, 403);
    assert_eq!(
        http.post(
            &format!("/v1/agents/{id1}/pull"),
            cred1,
            &json!({"max": 1, "wait_ms": 0})
        )
        .0,
        200
    );
}

#[test]
fn oversized_requests_get_413_and_bad_bodies_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_on(
        dir.path(),
        hetpilot_e2e::free_port(),
        30.0,
        &[("HETPILOT_LIMITS__MAX_SUBMIT_MIB", "1")],
    );
    let http = m.http();
    let lines: Vec<String> = (0..80_000).map(|i| format!("input-{i:08}")).collect();
    let big = serde_json::to_vec(
        &json!({"name": "big", "command": "echo {}", "tasks": {"lines": lines}}),
    )
    .unwrap();
    assert!(big.len() > 1 << 20);
    // The manager may answer 413 and close before the upload ends; a reset upload is retried.
    let status = (0..5).find_map(|_| http.try_post_bytes("/v1/apps", &m.admin, big.clone()));
    assert_eq!(status, Some(413));
    let (s, b) = http.post_bytes("/v1/apps", &m.admin, b"{not json".to_vec());
    assert_eq!(s, 400, "{b}");
    let (s, b) = http.post(
        "/v1/apps",
        &m.admin,
        &json!({"name": "x", "command": "echo {nope}", "tasks": {"array": {"start": 1, "end": 2}}}),
    );
    assert_eq!(s, 400);
    assert!(b["error"].as_str().unwrap().contains("{nope}"), "{b}");
    let (s, _) = http.post(
        "/v1/apps",
        &m.admin,
        &json!({"name": "x", "command": "echo", "tasks": {"lines": []}}),
    );
    assert_eq!(s, 400);
    assert_eq!(
        http.get("/v1/apps", &m.admin).1.as_array().unwrap().len(),
        0,
        "nothing stored"
    );
}

#[test]
fn reports_for_unknown_or_foreign_tasks_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let http = m.http();
    let app = m.submit(array_app("a", "true", 2));
    let reg_token = m.agent_token("local");
    let reg = json!({"platform": "local", "hostname": "h", "cores": 1, "memory_mb": 1, "slots": 1});
    let (_, a1) = http.post("/v1/agents", &reg_token, &reg);
    let (_, a2) = http.post("/v1/agents", &reg_token, &reg);
    let (id1, c1) = (
        a1["agent"].as_u64().unwrap(),
        a1["credential"].as_str().unwrap().to_string(),
    );
    let (id2, c2) = (
        a2["agent"].as_u64().unwrap(),
        a2["credential"].as_str().unwrap().to_string(),
    );
    let (s, pulled) = http.post(
        &format!("/v1/agents/{id1}/pull"),
        &c1,
        &json!({"max": 1, "wait_ms": 0}),
    );
    assert_eq!(s, 200);
    let task = pulled["tasks"][0]["task"].clone();
    let result = |task: serde_json::Value, attempt: u32| {
        json!({"results": [{"task": task, "attempt": attempt, "outcome": "success", "exit_code": 0, "signal": null,
            "measurements": {"started_at_ms": 1, "ended_at_ms": 2, "wall_ms": 1.0, "user_cpu_ms": 0.0,
            "sys_cpu_ms": 0.0, "max_rss_kb": 1, "co_runners": []}, "stdout_path": null, "stderr_path": null,
            "error": null}]})
    };
    let unknown = json!({"app": app, "index": 99});
    assert_eq!(
        http.post(
            &format!("/v1/agents/{id1}/results"),
            &c1,
            &result(unknown, 1)
        )
        .0,
        404
    );
    let other_app = json!({"app": 4242, "index": 0});
    assert_eq!(
        http.post(
            &format!("/v1/agents/{id1}/results"),
            &c1,
            &result(other_app, 1)
        )
        .0,
        404
    );
    // Agent 2 reports the task leased to agent 1: refused.
    let (s, b) = http.post(
        &format!("/v1/agents/{id2}/results"),
        &c2,
        &result(task.clone(), 1),
    );
    assert_eq!(s, 409, "{b}");
    let (_, summary) = http.get(&format!("/v1/apps/{app}"), &m.admin);
    assert_eq!(summary["counts"]["done"], 0);
    assert_eq!(summary["counts"]["leased"], 1);
    // The real holder's report is recorded once; a retry of it is a duplicate.
    let (s, b) = http.post(
        &format!("/v1/agents/{id1}/results"),
        &c1,
        &result(task.clone(), 1),
    );
    assert_eq!((s, b["recorded"].as_u64()), (200, Some(1)), "{b}");
    let (s, b) = http.post(&format!("/v1/agents/{id1}/results"), &c1, &result(task, 1));
    assert_eq!((s, b["duplicates"].as_u64()), (200, Some(1)), "{b}");
    let (_, summary) = http.get(&format!("/v1/apps/{app}"), &m.admin);
    assert_eq!(summary["counts"]["done"], 1);
}

#[test]
fn downloads_are_opaque_bytes_and_every_answer_says_nosniff() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let alice = m.create_user("alice");
    let client = reqwest::blocking::Client::new();
    let page = "<html><script>fetch('/v1/apps')</script></html>";
    let (s, b) = m
        .http()
        .post("/v1/apps", &alice, &array_app("a", "true", 1));
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    for path in [
        "/v1/files/page.html".to_string(),
        format!("/v1/apps/{app}/files/x.svg"),
    ] {
        let url = format!("{}{path}", m.url);
        let put = client
            .put(&url)
            .bearer_auth(&alice)
            .body(page)
            .send()
            .unwrap();
        assert_eq!(put.status().as_u16(), 201, "{path}");
        let got = client.get(&url).bearer_auth(&alice).send().unwrap();
        assert_eq!(got.status().as_u16(), 200, "{path}");
        let h = got.headers();
        // Never a type from the name or the contents: a browser must not render it.
        assert_eq!(h["content-type"], "application/octet-stream", "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["content-disposition"], "attachment", "{path}");
        assert_eq!(got.text().unwrap(), page);
    }
    // JSON answers, errors included, say so; the exposition and the dashboard keep theirs.
    for (path, token, status, content_type) in [
        ("/v1/apps", alice.as_str(), 200, "application/json"),
        ("/v1/health", "", 200, "application/json"),
        ("/v1/apps", "hpu_wrong", 401, "application/json"),
        (
            "/v1/files/missing.html",
            alice.as_str(),
            404,
            "application/json",
        ),
        (
            "/metrics",
            m.admin.as_str(),
            200,
            "application/openmetrics-text",
        ),
        ("/ui/", "", 200, "text/html"),
    ] {
        let r = client
            .get(format!("{}{path}", m.url))
            .bearer_auth(token)
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{path}");
        let h = r.headers();
        let got = h["content-type"].to_str().unwrap();
        assert!(got.starts_with(content_type), "{path}: {got}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
    }
}
