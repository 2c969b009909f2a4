//! Onboarding a user of a manager serving HTTPS with a self-signed certificate: `user add`
//! hands them URL, fingerprint and token (printed, or in a 0600 env file) that work as they
//! are; a client that does not trust the certificate says how to, in one line.

use hetpilot_e2e::{bin, Manager};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// `hetpilot ARGS` on the manager's host as its admin: everything from its data directory.
fn admin_on_host(m: &Manager, args: &[&str]) -> Output {
    Command::new(bin("hetpilot"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HETPILOT_DATA_DIR", &m.dir)
        .output()
        .unwrap()
}

/// `hetpilot status` in a shell of a new user that ran `setup` first (nothing else of
/// hetpilot's in its environment, an empty home).
fn status_after(home: &Path, setup: &str) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!("{setup}\nexec \"$HETPILOT\" status"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", home)
        .env("HETPILOT", bin("hetpilot"))
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_new_user_gets_what_reaches_a_self_signed_manager_and_a_stranger_is_told_how() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_tls(dir.path(), 30.0);
    let home = tempfile::tempdir().unwrap();
    let fingerprint = std::fs::read_to_string(m.dir.join("tls.fingerprint")).unwrap();

    // Printed: lines to paste into a shell.
    let o = admin_on_host(&m, &["user", "add", "alice"]);
    assert!(o.status.success(), "{}", text(&o));
    let block = String::from_utf8(o.stdout.clone()).unwrap();
    assert!(
        block.contains(&format!("export HETPILOT_URL={}\n", m.url)),
        "{block}"
    );
    assert!(
        block.contains(&format!(
            "export HETPILOT_TLS_FINGERPRINT={}\n",
            fingerprint.trim()
        )),
        "{block}"
    );
    assert!(block.contains("export HETPILOT_TOKEN=hpu_"), "{block}");
    let o = status_after(home.path(), &block);
    assert!(
        o.status.success(),
        "alice with the pasted block: {}",
        text(&o)
    );

    // Or an env file only its owner can read, never written over.
    let env = home.path().join("bob.env");
    let env_arg = env.to_str().unwrap();
    let o = admin_on_host(&m, &["user", "add", "bob", "--env-file", env_arg]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        o.stdout.is_empty(),
        "the token went to the file only: {}",
        text(&o)
    );
    let mode = std::fs::metadata(&env).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let o = status_after(home.path(), &format!(". {env_arg}"));
    assert!(o.status.success(), "bob with the env file: {}", text(&o));
    let o = admin_on_host(&m, &["user", "add", "bob", "--env-file", env_arg]);
    assert!(
        !o.status.success() && text(&o).contains("never replaced"),
        "{}",
        text(&o)
    );

    // A stranger without the fingerprint: told what to set, in one line, no verifier log.
    let token = std::fs::read_to_string(&env).unwrap();
    let token = token
        .lines()
        .find_map(|l| l.strip_prefix("export HETPILOT_TOKEN="))
        .unwrap();
    let o = status_after(
        home.path(),
        &format!("export HETPILOT_URL={} HETPILOT_TOKEN={token}", m.url),
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--tls-fingerprint") && err.contains("HETPILOT_TLS_FINGERPRINT"),
        "{err}"
    );
    assert!(!err.contains("hetpilot serve` running"), "{err}");
    assert!(!err.contains("rustls_platform_verifier"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
