//! `POST /v1/workflows` through the real manager and agents: an emulated WfCommons instance
//! and an emulated DAX posted by a user run to completion with the inputs the manager
//! created; a real workflow whose external inputs the user stored first
//! (`POST /v1/workflows/inputs` names them) runs its commands on them, and another user
//! cannot use them; an application file with `[[task]]` tables (`format=tasks`) runs its
//! three tasks in dependency order as the same application `hetpilot submit FILE` makes;
//! and the HTTP edge: the route's own body limit, a bad query, no token.

use hetpilot_e2e::{Http, Manager};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(300);

fn sample(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../samples/workflows")
            .join(name),
    )
    .unwrap()
}

/// POSTs `document` to `path` (with its query) as `token`.
fn post(http: &Http, path: &str, token: &str, document: Vec<u8>) -> (u16, Value) {
    http.post_bytes(path, token, document)
}

fn stored(m: &Manager, user: &str, name: &str) -> PathBuf {
    m.dir.join("files").join(user).join(name)
}

#[test]
fn an_emulated_instance_and_an_emulated_dax_posted_by_a_user_run_to_completion() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 10.0);
    let _agent = m.agent("local", 4, &[]);
    let alice = m.create_user("alice");
    let http = m.http();
    let (status, wf) = post(
        &http,
        "/v1/workflows?format=wfcommons&emulate=true&time_scale=0.005&size_scale=0.001\
         &prefix=epi&name=epigenomics-from-http",
        &alice,
        sample("epigenomics-chameleon-hep-1seq-100k-001.json"),
    );
    assert_eq!(status, 200, "{wf}");
    let (status, dax) = post(
        &http,
        "/v1/workflows?format=dax&emulate=true&time_scale=0.001&size_scale=0.0001",
        &alice,
        sample("Montage_25.xml"),
    );
    assert_eq!(status, 200, "{dax}");
    for (answer, tasks) in [(&wf, 41), (&dax, 25)] {
        let app = answer["app"].as_u64().unwrap();
        assert_eq!(answer["tasks"], tasks, "{answer}");
        let summary = m.wait_finished(app, LONG);
        assert_eq!(summary["counts"]["done"], tasks, "{summary}");
        assert_eq!(summary["owner"], "alice", "{summary}");
    }
    let (_, summary) = http.get(&format!("/v1/apps/{}", wf["app"]), &alice);
    assert_eq!(summary["name"], "epigenomics-from-http", "{summary}");
    // The manager created the external inputs at recorded size × 0.001 under the prefix.
    let maq = std::fs::metadata(stored(&m, "alice", "epi/maq")).unwrap();
    assert_eq!(maq.len(), 171);
}

/// A two-task WfFormat 1.5 workflow of real commands over one external input.
fn shout_workflow() -> Vec<u8> {
    json!({
        "schemaVersion": "1.5", "name": "shout",
        "workflow": {
            "specification": {
                "tasks": [
                    {"id": "upper", "parents": [], "children": ["count"],
                     "inputFiles": ["words.txt"], "outputFiles": ["up.txt"]},
                    {"id": "count", "parents": ["upper"], "children": [],
                     "inputFiles": ["up.txt"], "outputFiles": ["n.txt"]}
                ],
                "files": [{"id": "words.txt", "sizeInBytes": 15},
                          {"id": "up.txt"}, {"id": "n.txt"}]
            },
            "execution": {"tasks": [
                {"id": "upper", "runtimeInSeconds": 0.1, "command": {"program": "sh",
                 "arguments": ["-c", "tr a-z A-Z < words.txt > up.txt"]}},
                {"id": "count", "runtimeInSeconds": 0.1, "command": {"program": "sh",
                 "arguments": ["-c", "wc -c < up.txt > n.txt"]}}
            ]}
        }
    })
    .to_string()
    .into_bytes()
}

fn put_file(m: &Manager, token: &str, name: &str, body: &'static str) -> u16 {
    reqwest::blocking::Client::new()
        .put(format!("{}/v1/files/{name}", m.url))
        .bearer_auth(token)
        .body(body)
        .send()
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn stored_inputs_run_real_commands_and_are_the_storers_own() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 10.0);
    let _agent = m.agent("local", 2, &[]);
    let (alice, bob) = (m.create_user("alice"), m.create_user("bob"));
    let http = m.http();
    let (status, plan) = post(
        &http,
        "/v1/workflows/inputs?format=wfcommons",
        &alice,
        shout_workflow(),
    );
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["tasks"], 2, "{plan}");
    let prefix = plan["prefix"].as_str().unwrap().to_string();
    let inputs = plan["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 1, "{plan}");
    assert_eq!(inputs[0]["file"], "words.txt");
    let name = inputs[0]["name"].as_str().unwrap();
    assert_eq!(name, format!("{prefix}/words.txt"));
    assert_eq!(put_file(&m, &alice, name, "hello workflow\n"), 201);
    let query = format!("/v1/workflows?format=wfcommons&inputs=stored&prefix={prefix}");
    // Bob cannot run on Alice's input: his files under the prefix hold none.
    let (status, refused) = post(&http, &query, &bob, shout_workflow());
    assert_eq!(status, 400, "{refused}");
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains("1 of the workflow's 1 external inputs are not among your files")
            && error.contains("`words.txt`"),
        "{error}"
    );
    let (status, answer) = post(&http, &query, &alice, shout_workflow());
    assert_eq!(status, 200, "{answer}");
    let summary = m.wait_finished(answer["app"].as_u64().unwrap(), LONG);
    assert_eq!(summary["counts"]["done"], 2, "{summary}");
    let read = |n: &str| std::fs::read_to_string(stored(&m, "alice", &format!("{prefix}/{n}")));
    assert_eq!(read("up.txt").unwrap(), "HELLO WORKFLOW\n");
    assert_eq!(read("n.txt").unwrap().trim(), "15");
}

/// Three tasks appending their ids to `log`: `count` after `split`, `join` after both.
fn pipe_file(log: &Path) -> String {
    let log = log.display();
    format!(
        "max_attempts = 1\n\
         [[task]]\nid = \"split\"\ncommand = \"sh -c 'echo split >> {log}'\"\n\
         [[task]]\nid = \"count\"\ncommand = \"sh -c 'echo count >> {log}'\"\nafter = [\"split\"]\n\
         runtime = \"1s\"\n\
         [[task]]\nid = \"join\"\ncommand = \"sh -c 'echo join >> {log}'\"\n\
         after = [\"split\", \"count\"]\n"
    )
}

/// The application `app` as the manager stored it.
fn stored_spec(m: &Manager, app: u64) -> Value {
    let text: String = m
        .db()
        .query_row("SELECT spec FROM apps WHERE id = ?1", [app as i64], |r| {
            r.get(0)
        })
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn an_application_file_with_task_tables_runs_in_order_as_the_cli_submits_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 10.0);
    let _agent = m.agent("local", 2, &[]);
    let http = m.http();
    let log = dir.path().join("order.log");
    let file = dir.path().join("pipe.toml");
    std::fs::write(&file, pipe_file(&log)).unwrap();
    // As Python's `Client.submit_app_file` sends it: named after the file's stem.
    let (status, answer) = post(
        &http,
        "/v1/workflows?format=tasks&name=pipe",
        &m.admin,
        pipe_file(&log).into_bytes(),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["tasks"], 3, "{answer}");
    let ours = answer["app"].as_u64().unwrap();
    let summary = m.wait_finished(ours, LONG);
    assert_eq!(summary["counts"]["done"], 3, "{summary}");
    assert_eq!(summary["name"], "pipe", "{summary}");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "split\ncount\njoin\n",
        "each task after its parents"
    );
    let out = m.cli(&["submit", "--json", file.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cli = cli["app"].as_u64().unwrap();
    let summary = m.wait_finished(cli, LONG);
    assert_eq!(summary["counts"]["done"], 3, "{summary}");
    assert_eq!(stored_spec(&m, ours), stored_spec(&m, cli));
    // A file whose tasks are a [tasks] table (its `each_line` read next to it) is refused
    // by name: the manager has no file to read it next to.
    let (status, answer) = post(
        &http,
        "/v1/workflows?format=tasks",
        &m.admin,
        b"command = \"cat {}\"\n[tasks]\neach_line = \"list.txt\"\n".to_vec(),
    );
    assert_eq!(status, 400, "{answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("field `tasks`") && error.contains("POST /v1/apps"),
        "{error}"
    );
}

#[test]
fn the_route_has_its_own_body_limit_and_answers_bad_queries_and_strangers() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("manager.toml");
    std::fs::write(&config, "[limits]\nmax_submit_mib = 1\n").unwrap();
    let m = Manager::start_with(
        dir.path(),
        hetpilot_e2e::free_port(),
        10.0,
        &["--config", config.to_str().unwrap()],
        &[],
    );
    let alice = m.create_user("alice");
    let http = m.http();
    let mut big = sample("blast-chameleon-small-001.json");
    // Within the route's 8 MiB but past `/v1/apps`'s 1 MiB: read, and refused only for
    // what it is (trailing spaces are JSON whitespace).
    big.resize(3 << 20, b' ');
    let (status, answer) = post(&http, "/v1/workflows?format=wfcommons", &alice, big.clone());
    assert_eq!(
        status, 200,
        "a 3 MiB instance is within 8 × 1 MiB: {answer}"
    );
    let (status, answer) = post(&http, "/v1/workflows?format=dax", &alice, big.clone());
    assert_eq!(status, 400, "read as the DAX it is not: {answer}");
    big.resize((8 << 20) + 1, b' ');
    let (status, answer) = post(&http, "/v1/workflows?format=wfcommons", &alice, big);
    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["code"], "too_large", "{answer}");
    // An application file is held to 4 × the submit limit, as `hetpilot submit FILE`.
    let mut tasks = b"[[task]]\nid = \"a\"\ncommand = \"true\"\n".to_vec();
    tasks.resize((4 << 20) + 1, b'\n');
    let (status, answer) = post(&http, "/v1/workflows?format=tasks", &alice, tasks);
    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["code"], "too_large", "{answer}");
    let document = sample("blast-chameleon-small-001.json");
    for (query, says) in [
        ("/v1/workflows?format=yaml", "format"),
        ("/v1/workflows", "format"),
        ("/v1/workflows?format=dax&emulate=maybe", "emulate"),
        (
            "/v1/workflows?format=wfcommons&size_scale=x&emulate=true",
            "size_scale",
        ),
    ] {
        let (status, answer) = post(&http, query, &alice, document.clone());
        assert_eq!(status, 400, "{query}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{query}: {error}");
    }
    let (status, _) = post(
        &http,
        "/v1/workflows?format=wfcommons",
        "",
        document.clone(),
    );
    assert_eq!(status, 401);
    let registration = m.agent_token("local");
    let (status, _) = post(
        &http,
        "/v1/workflows?format=wfcommons",
        &registration,
        document,
    );
    assert_eq!(status, 403);
    let (status, _) = http.get("/v1/health", "");
    assert_eq!(status, 200, "the manager still serves");
}
