//! The agent checks an SFTP server's host key before logging in (against the local lab's
//! sshd on 127.0.0.1:2222, `deploy/lab/start.sh`): an unknown host is refused with its
//! fingerprint and the command that adds it; `--accept-new-host-keys` adds an unknown
//! host's key, after which strict checking passes; a changed key is refused even then.

use hetpilot_e2e::{lab, wait_until, Manager};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);
const PORT: u16 = 2222;

/// The lab's client key, or a panic saying how to start the lab.
fn client_key() -> PathBuf {
    let key = lab::lab_dir().join("ssh/id_ed25519");
    let up = key.exists() && std::net::TcpStream::connect(("127.0.0.1", PORT)).is_ok();
    assert!(
        up,
        "the lab is not up (no {} or nothing on 127.0.0.1:{PORT}): run deploy/lab/start.sh",
        key.display()
    );
    key
}

/// The lab sshd's host key: (`ssh-ed25519`, base64 key, fingerprint as `ssh-keygen -lf`
/// prints it).
fn lab_host_key() -> (String, String, String) {
    let public = lab::lab_dir().join("ssh/ssh_host_ed25519_key.pub");
    let text = std::fs::read_to_string(&public).unwrap();
    let mut fields = text.split_whitespace();
    let (kind, key) = (fields.next().unwrap(), fields.next().unwrap());
    let out = std::process::Command::new("ssh-keygen")
        .arg("-lf")
        .arg(&public)
        .output()
        .unwrap();
    let listing = String::from_utf8(out.stdout).unwrap();
    let fingerprint = listing.split_whitespace().nth(1).unwrap().to_string();
    assert!(fingerprint.starts_with("SHA256:"), "{listing}");
    (kind.into(), key.into(), fingerprint)
}

/// Runs one task fetching an sftp:// input from the lab on an agent checking host keys
/// against `known_hosts` (plus `extra` arguments); returns (whether the task succeeded,
/// its error).
fn fetch_once(known_hosts: &Path, extra: &[&str]) -> (bool, String) {
    let key = client_key();
    let remote = tempfile::tempdir().unwrap();
    std::fs::write(remote.path().join("in.bin"), b"sftp data").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_tls(dir.path(), 30.0);
    let mut args = vec![
        "--sftp-key",
        key.to_str().unwrap(),
        "--known-hosts",
        known_hosts.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let agent = m.agent("local", 1, &args);
    let input = format!(
        "sftp://root@127.0.0.1:{PORT}{}/in.bin",
        remote.path().display()
    );
    let app = m.submit(json!({
        "name": "sftp-host-key", "command": "cat in.bin",
        "tasks": {"array": {"start": 1, "end": 1}},
        "inputs": [input], "max_attempts": 1,
    }));
    let summary = m.wait_finished(app, LONG);
    let task: Value = wait_until("the task's last run to be stored", LONG, || {
        let (s, b) = m.http().get(&format!("/v1/tasks/{app}.0"), &m.admin);
        assert_eq!(s, 200, "{b}");
        b["last"]["outcome"].is_string().then_some(b)
    });
    let done = summary["counts"]["done"] == 1;
    let error = task["last"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        done || !error.is_empty(),
        "{summary} {task} {}",
        agent.log()
    );
    (done, error)
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn sftp_refuses_an_unknown_host_naming_its_fingerprint_and_how_to_add_it() {
    let (_, _, fingerprint) = lab_host_key();
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known_hosts");
    let (done, error) = fetch_once(&known, &[]);
    assert!(!done, "an unknown host must be refused");
    for part in [
        format!("127.0.0.1:{PORT} is not a known host"),
        format!("{} does not exist", known.display()),
        format!("ED25519 key {fingerprint}"),
        format!(
            "ssh-keyscan -p {PORT} -t ed25519 127.0.0.1 >> {}",
            known.display()
        ),
    ] {
        assert!(error.contains(&part), "{part:?} not in {error}");
    }
    assert!(!known.exists(), "strict checking must not create the file");
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn sftp_accept_new_adds_the_host_and_strict_checking_then_passes() {
    let (kind, key, _) = lab_host_key();
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("ssh/known_hosts");
    let (done, error) = fetch_once(&known, &["--accept-new-host-keys"]);
    assert!(done, "{error}");
    let text = std::fs::read_to_string(&known).unwrap();
    assert!(
        text.starts_with(&format!("[127.0.0.1]:{PORT} {kind} {key}")),
        "{text}"
    );
    let (done, error) = fetch_once(&known, &[]);
    assert!(done, "strict checking with the added key: {error}");
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn sftp_refuses_a_changed_host_key_even_with_accept_new() {
    let (kind, _, fingerprint) = lab_host_key();
    let other = std::fs::read_to_string(lab::lab_dir().join("ssh/id_ed25519.pub")).unwrap();
    let other_key = other.split_whitespace().nth(1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known_hosts");
    let listed = format!("[127.0.0.1]:{PORT} {kind} {other_key}\n");
    std::fs::write(&known, &listed).unwrap();
    let (done, error) = fetch_once(&known, &["--accept-new-host-keys"]);
    assert!(!done, "a changed key must be refused");
    assert!(
        error.contains(&format!("127.0.0.1:{PORT}: its host key differs")),
        "{error}"
    );
    assert!(
        error.contains(&format!("ED25519 key {fingerprint}")),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(&known).unwrap(),
        listed,
        "file unchanged"
    );
}
