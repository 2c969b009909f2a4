//! The local batch-system lab (`deploy/lab/start.sh`) for provisioning tests: checks it is
//! up (failing clearly if not), and writes manager configurations whose platforms point at
//! it through profiles.

use super::{bin, wait_until, Manager};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The lab's state directory (`HETPILOT_LAB`, default `/var/tmp/hetpilot-lab`).
pub fn lab_dir() -> PathBuf {
    std::env::var_os("HETPILOT_LAB")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/hetpilot-lab"))
}

/// The known_hosts file listing the lab sshd's host key (written by `deploy/lab/start.sh`).
pub fn known_hosts() -> PathBuf {
    lab_dir().join("ssh/known_hosts")
}

pub fn slurm_conf() -> PathBuf {
    lab_dir().join("etc/slurm.conf")
}

/// The lab's nodes are few: tests in one binary that use them run one at a time.
static LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Panics with what to do unless the lab's Slurm answers; hold the guard for the test.
pub fn require() -> std::sync::MutexGuard<'static, ()> {
    let guard = LAB.lock().unwrap_or_else(|p| p.into_inner());
    let conf = slurm_conf();
    let ok = conf.exists()
        && Command::new("sinfo")
            .arg("-h")
            .env("SLURM_CONF", &conf)
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    assert!(
        ok,
        "the local lab is not up ({} missing or `sinfo` fails): run deploy/lab/start.sh as root",
        conf.display()
    );
    guard
}

/// The shipped profile `name` (`profiles/platforms/<name>.toml`).
pub fn shipped_profile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../profiles/platforms")
        .join(format!("{name}.toml"))
}

/// Writes the profile of platform `name` whose pilots are forked on this machine (the
/// `local` adapter): 1 GB nodes of `cores` cores, pilots' files under `dir/pilots`, and
/// `extra` profile lines (caps, `pilots`, `sandbox`); returns its path.
pub fn local_profile(dir: &Path, name: &str, cores: u32, extra: &str) -> PathBuf {
    let profile = dir.join(format!("{name}.toml"));
    std::fs::write(
        &profile,
        format!(
            "name = \"{name}\"\nadapter = \"local\"\ncores_per_node = {cores}\n\
             memory_per_node = \"1GB\"\nmax_walltime = \"1h\"\n{extra}\n\
             agent_binary = \"{}\"\nwork_dir = \"{}\"\n",
            bin("hetpilot-agent").display(),
            dir.join("pilots").display()
        ),
    )
    .unwrap();
    profile
}

/// Writes a manager configuration in `dir` with `platforms` (name, profile) and a fast
/// provisioner (`provision`'s settings; idle agents are drained at once unless it sets
/// `idle_timeout_secs`); returns the environment a manager needs to use it and the lab.
pub fn configure(
    dir: &Path,
    platforms: &[(&str, &Path)],
    provision: &str,
) -> Vec<(String, String)> {
    let idle = if provision.contains("idle_timeout_secs") {
        ""
    } else {
        "idle_timeout_secs = 0\n"
    };
    let mut text = format!("[provision]\n{idle}{provision}\n");
    for (name, profile) in platforms {
        text.push_str(&format!(
            "[[platforms]]\nname = \"{name}\"\nprofile = \"{}\"\n",
            profile.display()
        ));
    }
    let config = dir.join("manager.toml");
    std::fs::write(&config, text).unwrap();
    let pilots = dir.join("pilots");
    std::fs::create_dir_all(&pilots).unwrap();
    vec![
        ("HETPILOT_CONFIG".into(), config.display().to_string()),
        (
            "HETPILOT_AGENT_BINARY".into(),
            bin("hetpilot-agent").display().to_string(),
        ),
        ("HETPILOT_LAB_DIR".into(), pilots.display().to_string()),
        (
            "HETPILOT_LAB_KEY".into(),
            lab_dir().join("ssh/id_ed25519").display().to_string(),
        ),
        (
            "HETPILOT_LAB_KNOWN_HOSTS".into(),
            known_hosts().display().to_string(),
        ),
        (
            "HETPILOT_LAB_GPU_BIN".into(),
            lab_dir().join("gpu/bin").display().to_string(),
        ),
        ("SLURM_CONF".into(), slurm_conf().display().to_string()),
    ]
}

/// Starts a manager with the environment from [`configure`].
pub fn start_manager(dir: &Path, env: &[(String, String)]) -> Manager {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Manager::start_on(dir, super::free_port(), 10.0, &env)
}

/// Starts a manager serving HTTPS (`--tls self-signed`) on a free port with `env`; its
/// pilots pin the certificate's fingerprint.
pub fn start_tls_manager(dir: &Path, env: &[(String, String)]) -> Manager {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let m = Manager::start_with(
        dir,
        super::free_port(),
        10.0,
        &["--tls", "self-signed"],
        &env,
    );
    assert!(m.url.starts_with("https://"), "{}", m.url);
    m
}

/// `GET /v1/pilots` as admin.
pub fn pilots(m: &Manager) -> Vec<Value> {
    let (status, body) = m.http().get("/v1/pilots", &m.admin);
    assert_eq!(status, 200, "{body}");
    body.as_array().cloned().unwrap_or_default()
}

/// Waits up to `timeout` until the manager has pilots and none is queued or running;
/// returns them.
pub fn wait_pilots_ended(m: &Manager, timeout: std::time::Duration) -> Vec<Value> {
    super::wait_until("the pilots to end", timeout, || {
        let ps = pilots(m);
        (!ps.is_empty()
            && ps
                .iter()
                .all(|p| p["state"] != "queued" && p["state"] != "running"))
        .then_some(ps)
    })
}

/// `GET /v1/platforms` as admin: the status of `name`, once it has one.
pub fn platform_status(m: &Manager, name: &str) -> Option<Value> {
    let (status, body) = m.http().get("/v1/platforms", &m.admin);
    assert_eq!(status, 200, "{body}");
    body.as_array()?.iter().find(|p| p["name"] == name).cloned()
}

/// Waits until some pilot satisfies `f`; returns it.
pub fn wait_pilot(m: &Manager, what: &str, timeout: Duration, f: impl Fn(&Value) -> bool) -> Value {
    wait_until(what, timeout, || pilots(m).into_iter().find(|p| f(p)))
}

/// Stops every pilot recorded in a data directory when dropped (as `Manager`'s `Drop`
/// does), also those of managers a test restarted there.
pub struct CancelOnDrop(pub PathBuf);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        super::pilots::stop_recorded(&self.0);
    }
}
