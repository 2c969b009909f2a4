//! HTTPS: a manager serving a self-signed certificate (`--tls self-signed`), agents pinning
//! its fingerprint, the CLI trusting it as a CA file or through the data directory, and the
//! refusals: a wrong fingerprint, plain HTTP to the TLS port, plain HTTP on a non-loopback
//! address without `--insecure-http`.

use hetpilot_e2e::{array_app, bin, free_port, wait_until, Agent, Manager};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn tls_manager(dir: &Path) -> Manager {
    Manager::start_with(dir, free_port(), 30.0, &["--tls", "self-signed"], &[])
}

fn fingerprint(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("tls.fingerprint"))
        .unwrap()
        .trim()
        .to_string()
}

fn cli(env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(bin("hetpilot"))
        .args(args)
        .env_remove("HETPILOT_CA_FILE")
        .env_remove("HETPILOT_TLS_FINGERPRINT")
        .envs(env.iter().copied())
        .output()
        .expect("running the hetpilot CLI")
}

/// The first `serve --tls self-signed` on a data directory that does not exist yet makes
/// it 0700 at once, and does not warn that "it was readable by others" about a directory
/// it has just made itself.
#[test]
fn a_new_data_directory_is_made_private_without_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("new-data");
    let log = std::fs::File::create(dir.path().join("serve.log")).unwrap();
    let mut serve = Command::new(bin("hetpilot"))
        .args(["serve", "--tls", "self-signed", "--listen"])
        .arg(format!("127.0.0.1:{}", free_port()))
        .arg("--data-dir")
        .arg(&data)
        .env_remove("HETPILOT_CONFIG")
        .env("RUST_LOG", "info")
        .stderr(log)
        .spawn()
        .unwrap();
    wait_until("the manager to listen", Duration::from_secs(30), || {
        std::fs::read_to_string(data.join("manager.url"))
            .ok()
            .filter(|u| !u.trim().is_empty())
    });
    let _ = serve.kill();
    let _ = serve.wait();
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let text = std::fs::read_to_string(dir.path().join("serve.log")).unwrap();
    assert!(!text.contains("readable by others"), "{text}");
}

#[test]
fn an_agent_pinning_the_fingerprint_runs_tasks_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let m = tls_manager(dir.path());
    assert!(m.url.starts_with("https://"), "{}", m.url);
    let key = std::fs::metadata(dir.path().join("tls-key.pem")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&key.permissions()) & 0o777,
        0o600
    );
    let fp = fingerprint(dir.path());
    assert_eq!(fp.len(), 64, "{fp}");
    let https = m.https(&dir.path().join("tls-cert.pem"));
    let (s, b) = https.post(
        "/v1/agent-tokens",
        &m.admin,
        &serde_json::json!({"platform": "local"}),
    );
    assert_eq!(s, 200, "{b}");
    let token = b["token"].as_str().unwrap().to_string();
    let (s, b) = https.post("/v1/apps", &m.admin, &array_app("tls", "echo {}", 6));
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    let agent = Agent::start(
        &m.url,
        "local",
        &token,
        2,
        &dir.path().join("agent"),
        &["--tls-fingerprint", &fp],
    );
    wait_until(
        "the tasks to finish over HTTPS",
        Duration::from_secs(60),
        || {
            let (_, s) = https.get(&format!("/v1/apps/{app}"), &m.admin);
            (s["counts"]["done"].as_u64() == Some(6)).then_some(())
        },
    );
    drop(agent);
}

#[test]
fn the_cli_trusts_a_ca_file_or_the_local_data_dir_and_refuses_a_wrong_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = tls_manager(dir.path());
    let ca = dir.path().join("tls-cert.pem");
    let ca = ca.to_str().unwrap();
    let remote = [
        ("HETPILOT_URL", m.url.as_str()),
        ("HETPILOT_TOKEN", m.admin.as_str()),
    ];
    let with_ca = cli(
        &[remote[0], remote[1], ("HETPILOT_CA_FILE", ca)],
        &["status"],
    );
    assert!(with_ca.status.success(), "{with_ca:?}");
    let local = cli(
        &[("HETPILOT_DATA_DIR", dir.path().to_str().unwrap())],
        &["status"],
    );
    assert!(local.status.success(), "the manager's own host: {local:?}");
    let wrong = "00".repeat(32);
    let refused = cli(
        &[remote[0], remote[1], ("HETPILOT_TLS_FINGERPRINT", &wrong)],
        &["status"],
    );
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("fingerprint") && err.contains(&fingerprint(dir.path())),
        "the error names the certificate's real fingerprint: {err}"
    );
    // Restarted, the manager serves the same certificate.
    let before = fingerprint(dir.path());
    let port = m.port;
    m.kill();
    let m = Manager::start_with(dir.path(), port, 30.0, &["--tls", "self-signed"], &[]);
    assert_eq!(fingerprint(dir.path()), before);
    drop(m);
}

#[test]
fn plain_http_to_the_tls_port_gets_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let m = tls_manager(dir.path());
    let plain = m.url.replacen("https://", "http://", 1);
    let r = reqwest::blocking::Client::new()
        .get(format!("{plain}/v1/health"))
        .timeout(Duration::from_secs(10))
        .send();
    assert!(r.is_err(), "{r:?}");
    let (s, _) = m
        .https(&dir.path().join("tls-cert.pem"))
        .get("/v1/health", "");
    assert_eq!(s, 200, "HTTPS still works");
}

#[test]
fn plain_http_on_a_non_loopback_address_needs_insecure_http() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin("hetpilot"))
        .args(["serve", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--insecure-http"), "{err}");
    assert!(!dir.path().join("manager.url").exists(), "it did not start");
}

#[test]
fn provisioned_pilots_pin_the_manager_s_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let profile =
        hetpilot_e2e::lab::local_profile(dir.path(), "here", 2, "max_queued = 1\nmax_running = 1");
    let env = hetpilot_e2e::lab::configure(
        dir.path(),
        &[("here", &profile)],
        "interval_secs = 0.3\nbackoff_base_secs = 1",
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let m = Manager::start_with(
        dir.path(),
        free_port(),
        10.0,
        &["--tls", "self-signed"],
        &env,
    );
    let https = m.https(&dir.path().join("tls-cert.pem"));
    let (s, b) = https.post("/v1/apps", &m.admin, &array_app("pilots", "true", 4));
    assert_eq!(s, 200, "{b}");
    let app = b["app"].as_u64().unwrap();
    wait_until(
        "the pilots to finish the tasks",
        Duration::from_secs(120),
        || {
            let (_, s) = https.get(&format!("/v1/apps/{app}"), &m.admin);
            (s["counts"]["done"].as_u64() == Some(4)).then_some(())
        },
    );
    let script = std::fs::read_dir(dir.path().join("pilots"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sh"))
        .expect("a pilot's job script");
    let text = std::fs::read_to_string(script).unwrap();
    assert!(
        text.contains(&format!(
            "HETPILOT_TLS_FINGERPRINT='{}'",
            fingerprint(dir.path())
        )),
        "{text}"
    );
}
