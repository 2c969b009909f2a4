//! The known_hosts lookups and appends against files, with libssh2's known-hosts API on an
//! unconnected session (no server needed: these calls only parse and format entries).

use super::known_hosts_file::{append, look_up};
use super::*;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ssh2::HostKeyType;
use std::os::unix::fs::PermissionsExt;

const KEY: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOMrhPGtonMnitBKrNZFO7vnROH//AmrhxGuA8Kk7TCq";
/// `[127.0.0.1]:2222 ssh-ed25519 KEY` hashed by `ssh-keygen -H`.
const HASHED: &str = "|1|Rw6WH9r1JxAOOJYcdC0WQDgfwyI=|4EB9iBfT+//ofxocZ95F0yye/O0= ssh-ed25519 \
                      AAAAC3NzaC1lZDI1NTE5AAAAIOMrhPGtonMnitBKrNZFO7vnROH//AmrhxGuA8Kk7TCq\n";

fn key() -> OfferedKey {
    OfferedKey::new(&STANDARD.decode(KEY).unwrap(), HostKeyType::Ed25519)
}

fn other_key() -> OfferedKey {
    let mut blob = STANDARD.decode(KEY).unwrap();
    *blob.last_mut().unwrap() ^= 1;
    OfferedKey::new(&blob, HostKeyType::Ed25519)
}

fn session() -> Session {
    Session::new().unwrap()
}

#[test]
fn hashed_and_port_entries_are_found_and_other_keys_differ() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("known_hosts");
    std::fs::write(&file, format!("# a comment\n{HASHED}")).unwrap();
    let s = session();
    let at = |host, port, key: &OfferedKey| look_up(&s, &file, host, port, key).unwrap();
    assert_eq!(at("127.0.0.1", 2222, &key()), Listing::Matches);
    assert_eq!(at("127.0.0.1", 2222, &other_key()), Listing::Differs);
    assert_eq!(at("127.0.0.1", 22, &key()), Listing::NotListed);
    assert_eq!(at("localhost", 2222, &key()), Listing::NotListed);
    let missing = dir.path().join("none");
    assert_eq!(
        look_up(&s, &missing, "h", 22, &key()).unwrap(),
        Listing::NoFile
    );
}

#[test]
fn append_creates_a_private_file_and_keeps_existing_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("new/.ssh/known_hosts");
    let s = session();
    append(&s, &file, "127.0.0.1", 2222, &key()).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(&format!("[127.0.0.1]:2222 ssh-ed25519 {KEY}")),
        "{text}"
    );
    assert_eq!(
        look_up(&s, &file, "127.0.0.1", 2222, &key()).unwrap(),
        Listing::Matches
    );

    // An existing file whose last line has no newline: that line is kept whole.
    let kept = dir.path().join("kept");
    std::fs::write(&kept, format!("# mine\n{}", HASHED.trim_end())).unwrap();
    append(&s, &kept, "h.example", 22, &key()).unwrap();
    let text = std::fs::read_to_string(&kept).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], ["# mine", HASHED.trim_end()], "{text}");
    assert!(lines[2].starts_with("h.example ssh-ed25519 "), "{text}");
}

#[test]
fn strict_refuses_unknown_and_changed_keys_with_what_to_do() {
    let check = HostKeyCheck::strict(Path::new("/nonexistent/known_hosts"));
    let fp = key().fingerprint();
    let unknown = check
        .refusal("127.0.0.1", 2222, Listing::NoFile, &key())
        .unwrap()
        .to_string();
    for part in [
        "127.0.0.1:2222 is not a known host",
        "/nonexistent/known_hosts does not exist",
        &format!("ED25519 key {fp}"),
        "ssh-keyscan -p 2222 -t ed25519 127.0.0.1 >> /nonexistent/known_hosts",
    ] {
        assert!(unknown.contains(part), "{part:?} not in {unknown}");
    }
    let changed = check
        .refusal("h", 22, Listing::Differs, &key())
        .unwrap()
        .to_string();
    assert!(changed.contains("h:22: its host key differs"), "{changed}");
    assert!(changed.contains("ssh-keygen -R h -f"), "{changed}");
    assert!(check.refusal("h", 22, Listing::Matches, &key()).is_none());
}
