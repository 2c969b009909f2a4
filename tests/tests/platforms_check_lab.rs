//! `hetpilot platforms check` against the local lab (`deploy/lab/start.sh`): for the
//! lab-ssh profile (login 127.0.0.1:2222, agents on localhost:2222) it reports each host's
//! key as listed, unknown (with its fingerprint and the command that adds it) or changed,
//! and fails the platform unless every key is listed.

use hetpilot_e2e::bin;
use hetpilot_e2e::lab::{self, configure};
use std::path::Path;
use std::process::Command;

/// Runs `hetpilot platforms check` on the lab-ssh profile with host keys checked against
/// `known_hosts`; returns whether it passed and what it printed.
fn check(known_hosts: &Path) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let profile = lab::shipped_profile("lab-ssh");
    let env = configure(dir.path(), &[("lab-ssh", &profile)], "");
    let out = Command::new(bin("hetpilot"))
        .args(["platforms", "check"])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("HETPILOT_LAB_KNOWN_HOSTS", known_hosts)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn platforms_check_reports_each_ssh_hosts_key_as_listed_unknown_or_changed() {
    let _lab = lab::require();
    let (passed, out) = check(&lab::known_hosts());
    assert!(passed, "{out}");
    for host in ["127.0.0.1", "localhost"] {
        let line = format!("ok   host key of {host}:2222: ED25519 key SHA256:");
        assert!(out.contains(&line), "{line:?} not in {out}");
    }

    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let (passed, out) = check(&empty);
    assert!(!passed, "{out}");
    for host in ["127.0.0.1", "localhost"] {
        let line = format!("FAIL host key: {host}:2222 is not a known host");
        assert!(out.contains(&line), "{line:?} not in {out}");
        let add = format!(
            "ssh-keyscan -p 2222 -t ed25519 {host} >> {}",
            empty.display()
        );
        assert!(out.contains(&add), "{add:?} not in {out}");
    }
    assert!(
        !out.contains("login reachable"),
        "no login after a refused key: {out}"
    );

    let client = std::fs::read_to_string(lab::lab_dir().join("ssh/id_ed25519.pub")).unwrap();
    let other_key = client.split_whitespace().nth(1).unwrap();
    let changed = dir.path().join("changed");
    std::fs::write(
        &changed,
        format!(
            "[127.0.0.1]:2222 ssh-ed25519 {other_key}\n[localhost]:2222 ssh-ed25519 {other_key}\n"
        ),
    )
    .unwrap();
    let (passed, out) = check(&changed);
    assert!(!passed, "{out}");
    assert!(
        out.contains("FAIL host key: 127.0.0.1:2222: its host key differs"),
        "{out}"
    );
}
