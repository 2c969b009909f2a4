//! Provisioning without a lab: a platform whose profile uses the `local` adapter gets
//! pilots forked on this machine; they register with their own credentials, run an
//! application to completion, and end once no work is left.

use hetpilot_e2e::lab::{configure, local_profile, pilots, start_manager, wait_pilots_ended};
use hetpilot_e2e::{array_app, wait_until};
use std::time::Duration;

#[test]
fn local_pilots_run_an_application_and_end_when_work_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let profile = local_profile(dir.path(), "here", 2, "max_queued = 1\nmax_running = 2");
    let env = configure(
        dir.path(),
        &[("here", &profile)],
        "interval_secs = 0.3\nbackoff_base_secs = 1",
    );
    let m = start_manager(dir.path(), &env);
    let app = m.submit(array_app("local-pilots", "sleep 0.2", 20));
    let summary = m.wait_finished(app, Duration::from_secs(120));
    assert_eq!(summary["counts"]["done"], 20, "{summary}");
    let ended = wait_pilots_ended(&m, Duration::from_secs(60));
    let registered: Vec<_> = ended.iter().filter(|p| p["agent"].is_u64()).collect();
    assert!(!registered.is_empty(), "{ended:?}");
    for p in &registered {
        assert_eq!(p["state"], "ended", "{p}");
        assert_eq!(p["platform"], "here");
    }
    // Each started pilot's batch-queue wait went into the metrics once.
    let metrics = reqwest::blocking::Client::new()
        .get(format!("{}/metrics", m.url))
        .bearer_auth(&m.admin)
        .send()
        .unwrap()
        .text()
        .unwrap();
    let started = ended
        .iter()
        .filter(|p| p["job_started_ms"].is_u64())
        .count();
    assert!(started >= registered.len(), "{ended:?}");
    let line = format!("hetpilot_pilot_start_wait_seconds_count{{platform=\"here\"}} {started}");
    assert!(metrics.lines().any(|l| l == line), "{line} in {metrics}");
    // Each pilot's credential was a 0600 file beside its 0700 script (never in it: see the
    // adapters' render tests), deleted by the agent once read.
    use std::os::unix::fs::PermissionsExt;
    let name = registered[0]["name"].as_str().unwrap();
    let pdir = dir.path().join("pilots").join(name);
    assert!(!pdir.join("credential").exists());
    let script = std::fs::read_dir(&pdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sh"))
        .expect("a job script");
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // The pilot's directory and its outputs are private, as the manager's work directory.
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&pdir), 0o700);
    for output in ["out", "err"] {
        let path = pdir.join(format!("{name}.{output}"));
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains("HETPILOT_AGENT_TOKEN_FILE"), "{text}");
    assert!(text.contains("--delete-token-file"), "{text}");
    // Only the admin sees pilots and platforms.
    let (_, user) = m
        .http()
        .post("/v1/users", &m.admin, &serde_json::json!({"name": "alice"}));
    let alice = user["token"].as_str().unwrap();
    for path in ["/v1/pilots", "/v1/platforms"] {
        assert_eq!(m.http().get(path, alice).0, 403, "{path}");
        assert_eq!(m.http().get(path, "").0, 401, "{path}");
        assert_eq!(m.http().get(path, &m.admin).0, 200, "{path}");
    }
    // `hetpilot pilots --all --json` lists them for the admin.
    let out = m.cli(&["pilots", "--all", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), ended.len());
}

#[test]
fn per_user_pilots_run_only_their_users_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let profile = local_profile(
        dir.path(),
        "mine",
        1,
        "max_queued = 2\nmax_running = 2\npilots = \"per-user\"",
    );
    let env = configure(
        dir.path(),
        &[("mine", &profile)],
        "interval_secs = 0.3\nbackoff_base_secs = 1",
    );
    let m = start_manager(dir.path(), &env);
    let http = m.http();
    let mut apps = Vec::new();
    for user in ["alice", "bob"] {
        let token = m.create_user(user);
        let (s, b) = http.post("/v1/apps", &token, &array_app(user, "sleep 0.1", 8));
        assert_eq!(s, 200, "{b}");
        apps.push((user, b["app"].as_u64().unwrap()));
    }
    for (_, app) in &apps {
        let summary = m.wait_finished(*app, Duration::from_secs(120));
        assert_eq!(summary["counts"]["done"], 8, "{summary}");
    }
    let registered: Vec<serde_json::Value> = pilots(&m)
        .into_iter()
        .filter(|p| p["agent"].is_u64())
        .collect();
    let user_of_agent = |agent: u64| {
        registered
            .iter()
            .find(|p| p["agent"] == agent)
            .map(|p| p["user"].as_str().unwrap_or("(none)").to_string())
    };
    let db = m.db();
    for (user, app) in &apps {
        let agents: Vec<u64> = db
            .prepare("SELECT DISTINCT agent_id FROM attempts WHERE app_id = ?1")
            .unwrap()
            .query_map([*app as i64], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|a| a.unwrap() as u64)
            .collect();
        assert!(!agents.is_empty());
        for a in agents {
            assert_eq!(
                user_of_agent(a).as_deref(),
                Some(*user),
                "{user}'s tasks ran on agent {a}: {registered:?}"
            );
        }
    }
}

/// A provisioned pilot's job script hands its agent that pilot's own credential, never a
/// reusable platform token: it registers only that pilot's agent, once. The profile's
/// agent here is a stand-in that keeps a copy of what it was given (and answers the
/// `--version` of the platform checks `serve` runs at start).
#[test]
fn a_pilots_job_script_carries_only_its_own_single_use_credential() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let captured = dir.path().join("captured");
    let stand_in = dir.path().join("stand-in-agent");
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\n[ \"${{1:-}}\" = --version ] && {{ echo stand-in; exit 0; }}\n\
             {{ cat \"$HETPILOT_AGENT_TOKEN_FILE\"; echo \"$HETPILOT_PILOT\"; }} \
             > {0}.part && mv {0}.part {0}\nexec sleep 300\n",
            captured.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let profile = dir.path().join("here.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"here\"\nadapter = \"local\"\ncores_per_node = 1\n\
             memory_per_node = \"1GB\"\nmax_walltime = \"1h\"\nmax_queued = 1\n\
             max_running = 1\nagent_binary = \"{}\"\nwork_dir = \"{}\"\n",
            stand_in.display(),
            dir.path().join("pilots").display()
        ),
    )
    .unwrap();
    let env = configure(
        dir.path(),
        &[("here", &profile)],
        "interval_secs = 0.3\nbackoff_base_secs = 1",
    );
    let m = start_manager(dir.path(), &env);
    m.submit(array_app("wants-a-pilot", "true", 1));
    let given = wait_until("the pilot's job to start", Duration::from_secs(60), || {
        std::fs::read_to_string(&captured).ok()
    });
    let (token, pilot) = match given.lines().collect::<Vec<_>>()[..] {
        [token, pilot] => (token.to_string(), pilot.to_string()),
        _ => panic!("{given:?}"),
    };
    let http = m.http();
    let (_, reusable) = http.get("/v1/agent-tokens", &m.admin);
    assert_eq!(
        reusable,
        serde_json::json!([]),
        "no platform token was made"
    );
    let register = |pilot: Option<&str>| {
        let mut body = serde_json::json!({"platform": "here", "hostname": "node1",
            "cores": 1, "memory_mb": 512});
        if let Some(p) = pilot {
            body["pilot"] = p.into();
        }
        http.post("/v1/agents", &token, &body)
    };
    let (status, body) = register(None);
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains(&format!("for pilot `{pilot}` only")),
        "{body}"
    );
    assert_eq!(register(Some(&pilot)).0, 200);
    let (status, body) = register(Some(&pilot));
    assert_eq!(status, 403, "used once: {body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("no longer waiting"),
        "{body}"
    );
}
