//! Registration credentials: what the tasks of an agent can find of the token it
//! registered with (nothing: the token file is consumed once read), and where
//! registrations may come from (the source address ranges a token or platform allows).

use hetpilot_e2e::{bin, Agent, Manager};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);
/// Far longer than an agent takes to refuse to start.
const SHORT: Duration = Duration::from_secs(30);
const NOBODY: u32 = 65534;

/// The text of a finished task's stdout file.
fn stdout_of(m: &Manager, task: &str) -> String {
    let (s, detail) = m.http().get(&format!("/v1/tasks/{task}"), &m.admin);
    assert_eq!(s, 200, "{detail}");
    let path = detail["last"]["stdout_path"]
        .as_str()
        .unwrap_or_else(|| panic!("no stdout: {detail}"));
    std::fs::read_to_string(path).unwrap()
}

/// A directory `nobody` owns (mode 0700) inside `parent`, which must let it through.
fn nobodys_dir(parent: &Path, name: &str) -> std::path::PathBuf {
    let d = parent.join(name);
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&d, Some(NOBODY), Some(NOBODY)).unwrap();
    d
}

/// The registered agents' count.
fn agents(m: &Manager) -> usize {
    let (s, list) = m.http().get("/v1/agents", &m.admin);
    assert_eq!(s, 200, "{list}");
    list.as_array().unwrap().len()
}

/// An agent started as the README shows, by an ordinary user in their home directory:
/// `(umask 077; hetpilot token agent --platform local > agent.token)`, then
/// `hetpilot-agent --manager URL --platform local --token-file agent.token`. Its task runs
/// as the same uid, reads the file's name from the agent's command line (readable by
/// everyone) and looks for it where the agent was started (`$HOME`, which tasks inherit,
/// and the agent's cwd): the file is gone, so the task never holds the token.
#[test]
fn a_task_cannot_find_the_token_file_its_agent_was_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    // The manager's data dir is the test's private temp dir: let `nobody` through to its home.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let home = nobodys_dir(dir.path(), "home");
    let as_user = |cmd: &mut Command| {
        cmd.current_dir(&home)
            .env("HOME", &home)
            .env("TMPDIR", &home)
            .env_remove("HETPILOT_CONFIG")
            .env_remove("HETPILOT_AGENT_TOKEN")
            .uid(NOBODY)
            .gid(NOBODY);
    };
    let mut made = Command::new("sh");
    made.arg("-c")
        .arg(format!(
            "umask 077; {} token agent --platform local > agent.token",
            bin("hetpilot").display()
        ))
        .env("HETPILOT_URL", &m.url)
        .env("HETPILOT_TOKEN", &m.admin);
    as_user(&mut made);
    let made = made.output().unwrap();
    assert!(made.status.success(), "{made:?}");
    let file = home.join("agent.token");
    let token = std::fs::read_to_string(&file).unwrap().trim().to_string();
    assert!(token.starts_with("hpr_"), "{token}");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let mut agent = Command::new(bin("hetpilot-agent"));
    agent
        .args(["--manager", &m.url, "--platform", "local"])
        .args(["--token-file", "agent.token"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("agent.log")).unwrap());
    as_user(&mut agent);
    // Killed when dropped, also if the test fails.
    let agent = Agent {
        child: agent.spawn().unwrap(),
        work_dir: home.clone(),
    };
    let pid = agent.child.id();
    let snoop = format!(
        "sh -c 'f=$(tr \"\\0\" \"\\n\" < /proc/{pid}/cmdline | grep -x -A1 -e --token-file | tail -n 1); \
         echo \"named: $f\"; cat \"$HOME/$f\" \"/proc/{pid}/cwd/$f\" 2>&1; echo end'"
    );
    let app = m.submit(json!({"name": "snoop", "command": snoop,
        "tasks": {"array": {"start": 0, "end": 0}}}));
    let finished = m.wait_finished(app, LONG);
    drop(agent);
    assert_eq!(finished["counts"]["done"], 1, "{finished}");
    let out = stdout_of(&m, &format!("{app}.0"));
    assert!(
        out.contains("named: agent.token"),
        "the task did find the file's name: {out}"
    );
    assert!(out.contains("No such file"), "{out}");
    assert!(!out.contains(&token), "the token leaked to a task:\n{out}");
    assert!(!file.exists(), "the agent consumed its token file");
}

/// A token file the agent may not remove (its directory is not the agent's to write) is
/// emptied once read; one it can neither remove nor empty makes it refuse to start, before
/// registering, with a message saying how to fix it.
#[test]
fn a_token_file_that_cannot_be_removed_is_emptied_or_the_agent_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let work = nobodys_dir(dir.path(), "work");
    // root's directory: `nobody` may read it but not remove what is in it.
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    let token_file = |name: &str, mode: u32| {
        let f = shared.join(name);
        std::fs::write(&f, m.agent_token("local")).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        std::os::unix::fs::chown(&f, Some(NOBODY), Some(NOBODY)).unwrap();
        f
    };
    let log = dir.path().join("agent.log");
    let start = |file: &Path| Agent {
        work_dir: work.clone(),
        child: Command::new(bin("hetpilot-agent"))
            .args(["--manager", &m.url, "--platform", "local", "--slots", "1"])
            .arg("--work-dir")
            .arg(&work)
            .arg("--token-file")
            .arg(file)
            .env_remove("HETPILOT_AGENT_TOKEN")
            .uid(NOBODY)
            .gid(NOBODY)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    };

    let read_only = token_file("read-only", 0o400);
    let mut refused = start(&read_only);
    let status = hetpilot_e2e::wait_until("the agent to refuse to start", SHORT, || {
        refused.child.try_wait().unwrap()
    });
    assert!(!status.success());
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(
        err.contains("cannot remove the token file") && err.contains("--keep-token-file"),
        "{err}"
    );
    assert_eq!(agents(&m), 0, "it refused before registering");

    let writable = token_file("writable", 0o600);
    let _agent = start(&writable);
    hetpilot_e2e::wait_until("the agent to register", LONG, || {
        (agents(&m) == 1).then_some(())
    });
    assert_eq!(std::fs::metadata(&writable).unwrap().len(), 0, "emptied");
    let warned = std::fs::read_to_string(&log).unwrap();
    assert!(warned.contains("emptied it instead"), "{warned}");
}

/// A registration token bound to 127.0.0.1/32 (`hetpilot token agent --from`) registers an
/// agent from 127.0.0.1 and is refused from 127.0.0.2 (403, and a WARN line in the
/// manager's log), through the manager's own accept loop; `token list` shows the range.
/// A malformed range is refused by the CLI naming `--from` and by the API naming
/// `register_from`.
#[test]
fn a_token_bound_to_an_address_range_registers_only_from_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let out = m.cli(&[
        "token",
        "agent",
        "--platform",
        "local",
        "--from",
        "127.0.0.1/32",
    ]);
    assert!(out.status.success(), "{out:?}");
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let register_from = |source: &str| {
        let source: std::net::IpAddr = source.parse().unwrap();
        let resp = reqwest::blocking::Client::builder()
            .local_address(source)
            .build()
            .unwrap()
            .post(format!("{}/v1/agents", m.url))
            .bearer_auth(&token)
            .json(
                &json!({"platform": "local", "hostname": "node1", "cores": 1,
                "memory_mb": 512}),
            )
            .send()
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json::<serde_json::Value>().unwrap())
    };
    let (status, body) = register_from("127.0.0.2");
    assert_eq!(status, 403, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("source address 127.0.0.2 is outside the ranges"),
        "{error}"
    );
    assert_eq!(agents(&m), 0);
    let (status, body) = register_from("127.0.0.1");
    assert_eq!(status, 200, "{body}");
    assert_eq!(agents(&m), 1);
    let log = std::fs::read_to_string(dir.path().join("manager.log")).unwrap();
    assert!(
        log.lines().any(|l| l.contains("WARN")
            && l.contains("agent registration refused")
            && l.contains("127.0.0.2")),
        "{log}"
    );
    let listed = m.cli(&["token", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        listed[0]["register_from"],
        json!(["127.0.0.1/32"]),
        "{listed}"
    );

    let bad = m.cli(&[
        "token",
        "agent",
        "--platform",
        "local",
        "--from",
        "127.0.0.1,10.0.0.0/33",
    ]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--from") && err.contains("`10.0.0.0/33` is not an address range"),
        "{err}"
    );
    let (status, body) = m.http().post(
        "/v1/agent-tokens",
        &m.admin,
        &json!({"platform": "local", "register_from": ["::ffff:10.0.0.0/200"]}),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("field `register_from`: "),
        "{body}"
    );
}
