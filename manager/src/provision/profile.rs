//! Platform profiles: what a site admin writes in `profiles/<name>.toml` to describe one
//! platform (a cluster partition, a queue, or a set of hosts reached over SSH).
//!
//! ```toml
//! name = "darth"
//! adapter = "pbs"                 # slurm | pbs | torque | loadleveler | ssh | local
//! login = "ssh://alice@login.darth.example:22"   # or "local"
//! key_file = "~/.ssh/id_ed25519"  # for ssh:// logins
//! known_hosts = "~/.ssh/known_hosts"  # ssh:// logins: the host keys trusted (this default)
//! host_key_policy = "strict"      # or "accept-new": trust an unknown host's key on first
//!                                 # contact and add it to known_hosts (a changed key is
//!                                 # refused either way)
//! queue = "batch"                 # partition (Slurm), queue (PBS), class (LoadLeveler)
//! nodes = 16                      # nodes on the platform (its size, checked against the
//!                                 # partition)
//! nodes_per_pilot = 1             # optional: nodes each pilot's batch job asks for (at
//!                                 # most `nodes`; 1 for local and ssh); its script starts
//!                                 # one agent on each, and they form one group
//! cores_per_node = 8
//! memory_per_node = "16GB"
//! max_walltime = "24h"
//! pilot_walltime = "2h"           # what each pilot asks for (<= max_walltime)
//! max_queued = 4                  # pilots waiting in the batch queue at once
//! max_running = 16                # pilots running at once
//! agent_binary = "/opt/hetpilot/bin/hetpilot-agent"
//! setup = ["module load gcc/12"]  # lines run before the agent starts
//! work_dir = "/scratch/hetpilot"  # pilots' scripts, credentials and task output
//! relative_speed = 1.0
//! hosts = ["node1", "node2"]      # ssh adapter only: the hosts agents start on
//! sandbox = "bwrap"               # optional: "none" (default) or "bwrap": each task in its
//!                                 # own bubblewrap sandbox (agents refuse to start without it)
//! account = "proj42"              # optional, passed to the batch system
//! pilots = "shared"               # or "per-user": each pilot runs one user's tasks only
//! gpus_per_node = 4               # optional: GPUs each pilot asks its batch system for
//! launcher = "mpiexec -hostfile {nodefile} -n {procs}"
//!                                 # optional: what a parallel task starts its ranks with
//!                                 # (`HETPILOT_LAUNCH`); placeholders {hosts} {nodefile}
//!                                 # {nodes} {procs} {job_id}. Default: Slurm `srun
//!                                 # --overlap --jobid={job_id} --nodes={nodes}
//!                                 # --nodelist={hosts} --ntasks={procs} --cpus-per-task=1
//!                                 # --distribution=block`, elsewhere this `mpiexec` line
//!
//! [resources]                     # optional: named counts each pilot's node offers
//! licenses = 2                    # (tasks ask `resources = { licenses = 1 }`)
//!
//! [staging]                       # optional: what Het-HPS assumes until it has measured
//! disk_mib_per_s = 500            # LBW_i, each node's local disk
//! link_mib_per_s = 100            # each node's share of the link to the storage
//! ```

use crate::control::StagingProfile;
use hetpilot_protocol::launcher::LaunchTemplate;
use hetpilot_protocol::resources::{
    check_name, ResourceAmount, GPUS, MAX_GPUS_PER_AGENT, MAX_RESOURCE_NAMES,
};
use hetpilot_transport::host_keys::{default_known_hosts, HostKeyCheck, HostKeyPolicy};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which batch system (or none) starts the pilots of a platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdapterKind {
    Slurm,
    /// PBS Professional: `qsub -l select=N:ncpus=K`.
    Pbs,
    /// TORQUE: `qsub -l nodes=N:ppn=K`.
    Torque,
    LoadLeveler,
    /// Agents started directly on named hosts over SSH.
    Ssh,
    /// Agents forked on the manager's machine.
    Local,
}

impl AdapterKind {
    pub fn name(self) -> &'static str {
        match self {
            AdapterKind::Slurm => "slurm",
            AdapterKind::Pbs => "pbs",
            AdapterKind::Torque => "torque",
            AdapterKind::LoadLeveler => "loadleveler",
            AdapterKind::Ssh => "ssh",
            AdapterKind::Local => "local",
        }
    }
}

/// Whose tasks a pilot of the platform may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PilotSharing {
    /// Any user's: the two-level scheduler may co-locate users' tasks on one node.
    #[default]
    Shared,
    /// One user's only: the provisioner asks for pilots per user, and a pilot's agent is
    /// leased only its user's tasks (the scheduler's shares still apply).
    PerUser,
}

/// Where the platform's commands run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    Local,
    Ssh {
        user: String,
        host: String,
        port: u16,
        key_file: PathBuf,
        /// The known_hosts file the host's key is checked against, and the policy.
        host_keys: HostKeyCheck,
    },
}

/// How the platform's agents isolate their tasks from each other and from the agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sandbox {
    /// Tasks run as plain processes of the agent's uid.
    #[default]
    None,
    /// Each task runs in a bubblewrap sandbox (`hetpilot-agent --sandbox bwrap`).
    Bwrap,
}

impl Sandbox {
    /// The agent's `--sandbox` value.
    pub fn name(self) -> &'static str {
        match self {
            Sandbox::None => "none",
            Sandbox::Bwrap => "bwrap",
        }
    }
}

/// A validated platform profile.
#[derive(Debug, Clone, PartialEq)]
pub struct PlatformProfile {
    pub name: String,
    pub adapter: AdapterKind,
    pub login: Login,
    pub queue: Option<String>,
    pub account: Option<String>,
    /// The platform's size in nodes.
    pub nodes: u32,
    /// Nodes each pilot's batch job asks for; one agent starts on each.
    pub nodes_per_pilot: u32,
    pub cores_per_node: u32,
    pub memory_per_node_mb: u64,
    pub max_walltime: Duration,
    pub pilot_walltime: Duration,
    pub max_queued: u32,
    pub max_running: u32,
    pub agent_binary: String,
    pub setup: Vec<String>,
    pub work_dir: String,
    pub relative_speed: f64,
    pub hosts: Vec<String>,
    pub staging: StagingProfile,
    pub pilots: PilotSharing,
    pub sandbox: Sandbox,
    /// GPUs each pilot asks its batch system for (0: none).
    pub gpus_per_node: u32,
    /// Named counts each pilot's node offers besides cores, memory and GPUs.
    pub resources: BTreeMap<String, ResourceAmount>,
    /// What a parallel task on the platform starts its ranks with.
    pub launcher: LaunchTemplate,
}

/// A profile that cannot be used; the message names the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read platform profile {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Toml { path: PathBuf, message: String },
    #[error("{path}: field `{field}`: {problem}")]
    Invalid {
        path: PathBuf,
        field: &'static str,
        problem: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: String,
    adapter: AdapterKind,
    #[serde(default = "local_login")]
    login: String,
    key_file: Option<String>,
    known_hosts: Option<String>,
    host_key_policy: Option<String>,
    queue: Option<String>,
    account: Option<String>,
    #[serde(default = "one")]
    nodes: u32,
    #[serde(default = "one")]
    nodes_per_pilot: u32,
    cores_per_node: u32,
    memory_per_node: String,
    max_walltime: String,
    pilot_walltime: Option<String>,
    #[serde(default = "one")]
    max_queued: u32,
    #[serde(default = "one")]
    max_running: u32,
    agent_binary: String,
    #[serde(default)]
    setup: Vec<String>,
    work_dir: String,
    #[serde(default = "unit")]
    relative_speed: f64,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default)]
    staging: StagingProfile,
    #[serde(default)]
    pilots: PilotSharing,
    #[serde(default)]
    sandbox: Sandbox,
    #[serde(default)]
    gpus_per_node: u32,
    #[serde(default)]
    resources: BTreeMap<String, ResourceAmount>,
    launcher: Option<String>,
}

fn local_login() -> String {
    "local".into()
}
fn one() -> u32 {
    1
}
fn unit() -> f64 {
    1.0
}

/// Platform and queue names go into job scripts and command lines: keep them to a safe
/// alphabet so no quoting mistake anywhere can turn them into shell syntax.
pub fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && !s.starts_with(['-', '.'])
}

impl PlatformProfile {
    /// Reads and validates one profile file.
    pub fn load(path: &Path) -> Result<PlatformProfile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses and validates a profile's text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<PlatformProfile, ProfileError> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| ProfileError::Toml {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let invalid = |field: &'static str, problem: String| ProfileError::Invalid {
            path: path.to_path_buf(),
            field,
            problem,
        };
        if !is_safe_name(&file.name) {
            return Err(invalid(
                "name",
                format!(
                    "{:?}: use letters, digits, `-`, `_` and `.` (at most 64)",
                    file.name
                ),
            ));
        }
        for (field, value) in [("queue", &file.queue), ("account", &file.account)] {
            if let Some(v) = value {
                if !is_safe_name(v) {
                    return Err(invalid(
                        field,
                        format!("{v:?}: use letters, digits, `-`, `_` and `.`"),
                    ));
                }
            }
        }
        let host_keys = HostKeyCheck {
            known_hosts: match &file.known_hosts {
                Some(p) if p.is_empty() || p.contains(['\n', '\0']) => {
                    return Err(invalid("known_hosts", "must be a path".into()))
                }
                Some(p) => expand_home(p),
                None => default_known_hosts(),
            },
            policy: match &file.host_key_policy {
                Some(p) => p
                    .parse::<HostKeyPolicy>()
                    .map_err(|e| invalid("host_key_policy", e.to_string()))?,
                None => HostKeyPolicy::Strict,
            },
        };
        let login = parse_login(&file.login, file.key_file.as_deref(), host_keys)
            .map_err(|problem| invalid("login", problem))?;
        if file.cores_per_node == 0 {
            return Err(invalid("cores_per_node", "must be at least 1".into()));
        }
        if file.nodes == 0 {
            return Err(invalid("nodes", "must be at least 1".into()));
        }
        check_nodes_per_pilot(&file).map_err(|problem| invalid("nodes_per_pilot", problem))?;
        let memory_per_node_mb = crate::trace::parse_size(&file.memory_per_node)
            .map_err(|e| invalid("memory_per_node", e.to_string()))?
            / (1024 * 1024);
        if memory_per_node_mb == 0 {
            return Err(invalid("memory_per_node", "must be at least 1 MiB".into()));
        }
        let duration = |field: &'static str, v: &str| {
            humantime::parse_duration(v)
                .map_err(|e| invalid(field, format!("{v:?}: {e} (e.g. \"2h\", \"90m\")")))
        };
        let max_walltime = duration("max_walltime", &file.max_walltime)?;
        let pilot_walltime = match &file.pilot_walltime {
            Some(v) => duration("pilot_walltime", v)?,
            None => max_walltime,
        };
        if pilot_walltime > max_walltime || pilot_walltime < Duration::from_secs(60) {
            return Err(invalid(
                "pilot_walltime",
                "must be between 1 minute and max_walltime".into(),
            ));
        }
        if file.max_running == 0 {
            return Err(invalid("max_running", "must be at least 1".into()));
        }
        if !(file.relative_speed.is_finite() && file.relative_speed > 0.0) {
            return Err(invalid(
                "relative_speed",
                "must be a positive number".into(),
            ));
        }
        if file.agent_binary.is_empty() || file.agent_binary.contains(['\n', '\0']) {
            return Err(invalid("agent_binary", "must be a path".into()));
        }
        if file.work_dir.is_empty() || file.work_dir.contains(['\n', '\0']) {
            return Err(invalid("work_dir", "must be a path".into()));
        }
        if file.setup.iter().any(|l| l.contains(['\n', '\0'])) {
            return Err(invalid("setup", "each entry must be one line".into()));
        }
        if file.adapter == AdapterKind::Ssh && file.hosts.is_empty() {
            return Err(invalid(
                "hosts",
                "the ssh adapter needs at least one host".into(),
            ));
        }
        if let Some(h) = file.hosts.iter().find(|h| !is_safe_name(h)) {
            return Err(invalid("hosts", format!("{h:?} is not a host name")));
        }
        if let Some((i, h)) = file
            .hosts
            .iter()
            .enumerate()
            .find(|(i, h)| file.hosts[..*i].contains(h))
        {
            return Err(invalid(
                "hosts",
                format!("{h:?} is listed twice (again at position {})", i + 1),
            ));
        }
        for (field, v) in [
            ("staging.disk_mib_per_s", file.staging.disk_mib_per_s),
            ("staging.link_mib_per_s", file.staging.link_mib_per_s),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(field, format!("{v}: must be a positive number")));
            }
        }
        if file.gpus_per_node > MAX_GPUS_PER_AGENT as u32 {
            return Err(invalid(
                "gpus_per_node",
                format!("{}: at most {MAX_GPUS_PER_AGENT}", file.gpus_per_node),
            ));
        }
        if file.resources.len() > MAX_RESOURCE_NAMES {
            return Err(invalid(
                "resources",
                format!("at most {MAX_RESOURCE_NAMES} names"),
            ));
        }
        for name in file.resources.keys() {
            check_name(name).map_err(|e| invalid("resources", e.to_string()))?;
            if name == GPUS {
                return Err(invalid(
                    "resources",
                    "GPUs are `gpus_per_node`, not a named resource".into(),
                ));
            }
        }
        let launcher = match &file.launcher {
            Some(text) => {
                LaunchTemplate::parse(text).map_err(|e| invalid("launcher", e.to_string()))?
            }
            None => default_launcher(file.adapter),
        };
        Ok(PlatformProfile {
            launcher,
            name: file.name,
            adapter: file.adapter,
            login,
            queue: file.queue,
            account: file.account,
            nodes: file.nodes,
            nodes_per_pilot: file.nodes_per_pilot,
            cores_per_node: file.cores_per_node,
            memory_per_node_mb,
            max_walltime,
            pilot_walltime,
            max_queued: file.max_queued,
            max_running: file.max_running,
            agent_binary: file.agent_binary,
            setup: file.setup,
            work_dir: file.work_dir,
            pilots: file.pilots,
            relative_speed: file.relative_speed,
            hosts: file.hosts,
            staging: file.staging,
            sandbox: file.sandbox,
            gpus_per_node: file.gpus_per_node,
            resources: file.resources,
        })
    }

    /// Cores one pilot brings: its nodes × cores per node.
    pub fn cores_per_pilot(&self) -> u64 {
        u64::from(self.nodes_per_pilot) * u64::from(self.cores_per_node)
    }
}

/// The launcher of a platform whose profile names none: a Slurm job step within the
/// head's allocation, elsewhere `mpiexec` with the host file.
fn default_launcher(adapter: AdapterKind) -> LaunchTemplate {
    match adapter {
        AdapterKind::Slurm => LaunchTemplate::slurm(),
        _ => LaunchTemplate::mpiexec(),
    }
}

/// A pilot fits the platform: at least one node, at most the platform's `nodes`, one node
/// for the local adapter (the manager's own machine), and for the ssh adapter (one agent
/// per host) no more nodes than it has hosts.
fn check_nodes_per_pilot(file: &ProfileFile) -> Result<(), String> {
    let n = file.nodes_per_pilot;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    if n > file.nodes {
        return Err(format!(
            "{n}: more than the platform's `nodes` ({})",
            file.nodes
        ));
    }
    match file.adapter {
        AdapterKind::Local if n > 1 => Err(format!(
            "{n}: the local adapter starts agents on this machine only: use 1"
        )),
        AdapterKind::Ssh if n as usize > file.hosts.len() => Err(format!(
            "{n}: the ssh adapter starts one agent on each of a pilot's hosts, and this \
             platform has {} `hosts`",
            file.hosts.len()
        )),
        _ => Ok(()),
    }
}

/// `local`, or `ssh://user@host[:port]` (port 22 by default) with a key file and the
/// host-key check.
fn parse_login(
    login: &str,
    key_file: Option<&str>,
    host_keys: HostKeyCheck,
) -> Result<Login, String> {
    if login == "local" {
        return Ok(Login::Local);
    }
    let rest = login
        .strip_prefix("ssh://")
        .ok_or_else(|| format!("{login:?}: expected \"local\" or \"ssh://user@host:port\""))?;
    let (user, host_port) = rest
        .split_once('@')
        .ok_or_else(|| format!("{login:?}: the user is missing (ssh://user@host)"))?;
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("{login:?}: bad port {p:?}"))?,
        ),
        None => (host_port, 22),
    };
    if !is_safe_name(user) || !is_safe_name(host) {
        return Err(format!("{login:?}: bad user or host name"));
    }
    let key_file = key_file.ok_or_else(|| "an ssh:// login needs `key_file`".to_string())?;
    Ok(Login::Ssh {
        user: user.into(),
        host: host.into(),
        port,
        key_file: expand_home(key_file),
        host_keys,
    })
}

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
#[path = "profile_fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
name = "p"
adapter = "slurm"
cores_per_node = 4
memory_per_node = "8GB"
max_walltime = "2h"
agent_binary = "/opt/hetpilot-agent"
work_dir = "/scratch"
"#;

    fn parse(extra: &str) -> Result<PlatformProfile, ProfileError> {
        PlatformProfile::parse(&format!("{BASE}{extra}"), Path::new("p.toml"))
    }

    #[test]
    fn staging_table_is_optional_and_validated() {
        assert_eq!(parse("").unwrap().staging, StagingProfile::default());
        let p = parse("[staging]\nlink_mib_per_s = 12.5\n").unwrap();
        assert_eq!(p.staging.link_mib_per_s, 12.5);
        assert_eq!(p.staging.disk_mib_per_s, 500.0);
        let err = parse("[staging]\ndisk_mib_per_s = 0\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("staging.disk_mib_per_s"), "{err}");
        let err = parse("[staging]\nlink_bandwidth = 5\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("link_bandwidth"), "{err}");
    }

    #[test]
    fn sandbox_is_optional_and_validated() {
        assert_eq!(parse("").unwrap().sandbox, Sandbox::None);
        assert_eq!(
            parse("sandbox = \"bwrap\"\n").unwrap().sandbox,
            Sandbox::Bwrap
        );
        let err = parse("sandbox = \"docker\"\n").unwrap_err().to_string();
        assert!(err.contains("sandbox"), "{err}");
    }

    #[test]
    fn gpus_and_named_resources_are_optional_and_validated() {
        let p = parse("").unwrap();
        assert_eq!((p.gpus_per_node, p.resources.len()), (0, 0));
        let p = parse("gpus_per_node = 4\n[resources]\nlicenses = 2\nscratch_gb = 0.5\n").unwrap();
        assert_eq!(p.gpus_per_node, 4);
        assert_eq!(p.resources["licenses"].to_string(), "2");
        assert_eq!(p.resources["scratch_gb"].to_string(), "0.5");
        for (extra, field) in [
            ("gpus_per_node = 65\n", "gpus_per_node"),
            ("gpus_per_node = -1\n", "gpus_per_node"),
            ("[resources]\ngpus = 2\n", "gpus_per_node"),
            ("[resources]\nLicenses = 2\n", "resource name"),
            ("[resources]\nlicenses = nan\n", "not a number"),
            ("[resources]\nlicenses = -3\n", "above 0"),
        ] {
            let err = parse(extra).unwrap_err().to_string();
            assert!(err.contains(field), "{extra}: {err}");
        }
    }

    #[test]
    fn nodes_per_pilot_defaults_to_one_and_fits_the_platform() {
        let p = parse("nodes = 16\n").unwrap();
        assert_eq!(
            (p.nodes, p.nodes_per_pilot, p.cores_per_pilot()),
            (16, 1, 4)
        );
        let p = parse("nodes = 16\nnodes_per_pilot = 4\n").unwrap();
        assert_eq!((p.nodes_per_pilot, p.cores_per_pilot()), (4, 16));
        let ssh = "adapter = \"ssh\"\nhosts = [\"h1\", \"h2\"]\nnodes = 8\n";
        let base = BASE.replace("adapter = \"slurm\"\n", "");
        let with =
            |extra: &str| PlatformProfile::parse(&format!("{base}{extra}"), Path::new("p.toml"));
        for n in [1, 2] {
            let p = with(&format!("{ssh}nodes_per_pilot = {n}\n")).unwrap();
            assert_eq!(p.nodes_per_pilot, n);
        }
        let twice = with("adapter = \"ssh\"\nhosts = [\"a\", \"b\", \"a\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            twice.contains("hosts")
                && twice.contains("\"a\" is listed twice (again at position 3)"),
            "{twice}"
        );
        for (text, problem) in [
            (format!("{BASE}nodes_per_pilot = 0\n"), "at least 1"),
            (
                format!("{BASE}nodes = 2\nnodes_per_pilot = 3\n"),
                "more than the platform's `nodes` (2)",
            ),
            (format!("{BASE}nodes_per_pilot = -1\n"), "nodes_per_pilot"),
            (
                format!("{base}{ssh}nodes_per_pilot = 3\n"),
                "one agent on each of a pilot's hosts, and this platform has 2 `hosts`",
            ),
            (
                format!("{base}adapter = \"local\"\nnodes = 2\nnodes_per_pilot = 2\n"),
                "local adapter",
            ),
        ] {
            let err = PlatformProfile::parse(&text, Path::new("p.toml"))
                .unwrap_err()
                .to_string();
            assert!(err.contains("nodes_per_pilot"), "{text}: {err}");
            assert!(err.contains(problem), "{text}: {err}");
        }
    }

    #[test]
    fn the_launcher_defaults_per_adapter_and_an_unknown_placeholder_names_the_key() {
        assert_eq!(parse("").unwrap().launcher, LaunchTemplate::slurm());
        let pbs = BASE.replace("\"slurm\"", "\"pbs\"");
        let p = PlatformProfile::parse(&pbs, Path::new("p.toml")).unwrap();
        assert_eq!(p.launcher, LaunchTemplate::mpiexec());
        let p = parse("launcher = \"mpirun -np {procs} --hostfile {nodefile}\"\n").unwrap();
        assert_eq!(
            p.launcher.words(),
            ["mpirun", "-np", "{procs}", "--hostfile", "{nodefile}"]
        );
        for (line, problem) in [
            (
                "launcher = \"srun --nodelist={host}\"",
                "\"{host}\" is not a placeholder",
            ),
            ("launcher = \"srun; reboot\"", "\"srun;\" has characters"),
            ("launcher = \"\"", "names no command"),
        ] {
            let err = parse(&format!("{line}\n")).unwrap_err().to_string();
            assert!(
                err.contains("p.toml: field `launcher`: ") && err.contains(problem),
                "{line}: {err}"
            );
        }
    }

    fn ssh_host_keys(extra: &str) -> Result<HostKeyCheck, ProfileError> {
        let login = "login = \"ssh://alice@login.example:2222\"\nkey_file = \"~/k\"\n";
        match parse(&format!("{login}{extra}"))?.login {
            Login::Ssh { host_keys, .. } => Ok(host_keys),
            Login::Local => panic!("an ssh:// login"),
        }
    }

    #[test]
    fn host_keys_default_to_strict_checking_against_the_users_known_hosts() {
        let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set for tests"));
        let check = ssh_host_keys("").unwrap();
        assert_eq!(check.known_hosts, home.join(".ssh/known_hosts"));
        assert_eq!(check.policy, HostKeyPolicy::Strict);
    }

    #[test]
    fn known_hosts_and_host_key_policy_are_read_and_validated() {
        let check = ssh_host_keys(
            "known_hosts = \"~/site/known_hosts\"\nhost_key_policy = \"accept-new\"\n",
        )
        .unwrap();
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        assert_eq!(check.known_hosts, home.join("site/known_hosts"));
        assert_eq!(check.policy, HostKeyPolicy::AcceptNew);
        let check =
            ssh_host_keys("known_hosts = \"/etc/kh\"\nhost_key_policy = \"strict\"\n").unwrap();
        assert_eq!(check, HostKeyCheck::strict(Path::new("/etc/kh")));

        let err = ssh_host_keys("host_key_policy = \"yes\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("field `host_key_policy`"), "{err}");
        assert!(
            err.contains("\"yes\"") && err.contains("accept-new"),
            "{err}"
        );
        let err = ssh_host_keys("known_hosts = \"\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("field `known_hosts`"), "{err}");
        let err = ssh_host_keys("host_key_policy = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("host_key_policy"), "{err}");
    }
}
