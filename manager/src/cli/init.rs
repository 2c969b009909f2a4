//! `hetpilot init`: writes a commented starter configuration for a site (the file
//! `hetpilot serve --config` and every other command's `--config` read), with one
//! `[[platforms]]` entry per platform profile given, and refuses to overwrite a file unless
//! told to. `hetpilot init --check FILE` checks an existing configuration and the profiles
//! it names instead (unknown keys, wrong types, names), writing nothing.

use anyhow::{bail, Context};
use clap::Args as ClapArgs;
use hetpilot::config::{default_data_dir, ManagerConfig};
use hetpilot::provision::catalog::load_profile;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Where to write the configuration (with `--check`: the file to check).
    #[arg(default_value = "manager.toml")]
    pub output: PathBuf,
    /// Check the existing configuration and the platform profiles it names; write nothing.
    #[arg(long, conflicts_with_all = ["force", "profiles", "data_dir"])]
    pub check: bool,
    /// The manager's data directory (database, admin token, manager.url).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The address the HTTP API listens on.
    #[arg(long, default_value = "127.0.0.1:8470")]
    pub listen: String,
    /// A platform profile to provision pilots with (repeat for more); its `name` becomes
    /// the platform's. Without any, the configuration has one `local` platform whose
    /// agents are started by hand.
    #[arg(long = "profile", value_name = "FILE")]
    pub profiles: Vec<PathBuf>,
    /// Replace an existing file.
    #[arg(long)]
    pub force: bool,
}

/// The `name` a profile file declares (read without substituting its `${VAR}`s, which
/// belong to the manager's environment).
fn profile_name(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the profile {}", path.display()))?;
    let value: toml::Table =
        toml::from_str(&text).with_context(|| format!("parsing the profile {}", path.display()))?;
    match value.get("name").and_then(|n| n.as_str()) {
        Some(name) => Ok(name.to_string()),
        None => bail!("{}: the profile has no `name`", path.display()),
    }
}

/// A TOML basic string holding `s`.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The starter configuration: `platforms` are (name, absolute profile path).
pub fn starter(listen: &str, data_dir: &Path, platforms: &[(String, PathBuf)]) -> String {
    let mut out = format!(
        r#"# hetpilot manager configuration, written by `hetpilot init`.
# `hetpilot serve --config THIS_FILE` runs the manager; every other command finds the
# manager and its admin token through the same file: `--config THIS_FILE`, or
#   export HETPILOT_CONFIG=THIS_FILE
# Layers: built-in defaults < this file < HETPILOT_* variables (nested keys with `__`,
# e.g. HETPILOT_PROVISION__INTERVAL_SECS=2) < command-line flags.

# The HTTP API. Plain HTTP is served on loopback addresses only: on any other address
# serve HTTPS (tls_cert and tls_key below, or `hetpilot serve --tls self-signed`).
listen = {listen}
# The database, admin.token (mode 0600), manager.url and tls.fingerprint live here.
data_dir = {data_dir}
# An agent silent for this long is lost and its tasks go back to their queues.
lease_timeout_secs = 30
# tls_cert = "/etc/hetpilot/cert.pem"
# tls_key = "/etc/hetpilot/key.pem"
# What pilots' agents use to reach the manager (default: the listen address):
# advertise_url = "https://head.example.org:8470"
"#,
        listen = toml_string(listen),
        data_dir = toml_string(&data_dir.to_string_lossy()),
    );
    out.push_str(
        "\n# One entry per platform. With a `profile` (profiles/platforms/README.md) the manager\n\
         # submits pilots there itself; without one, start agents by hand with a token from\n\
         # `hetpilot token agent --platform NAME`. Check profiles with `hetpilot platforms check`.\n\
         # `register_from = [\"10.1.0.0/16\"]` in an entry: its agents may register only from\n\
         # these source addresses (CIDR), whatever token they hold.\n",
    );
    if platforms.is_empty() {
        out.push_str(
            "[[platforms]]\nname = \"local\"\ndescription = \"agents started by hand on this machine\"\n",
        );
    }
    for (name, profile) in platforms {
        out.push_str(&format!(
            "[[platforms]]\nname = {}\nprofile = {}\n",
            toml_string(name),
            toml_string(&profile.to_string_lossy())
        ));
    }
    out.push_str(
        r#"
[provision]                     # pilots on profiled platforms (these are the defaults)
# interval_secs = 5             # one batched poll (squeue/qstat/llq) per platform
# register_timeout_secs = 300   # a running job whose agent has not registered is cancelled
# replace_lead_secs = 600       # a pilot with less walltime left is replaced ahead of time
# backoff_base_secs = 5         # per-platform exponential backoff after a failure ...
# backoff_max_secs = 600        # ... up to this
# idle_timeout_secs = 60        # an agent idle this long, with nothing waiting, is drained
# cancel_on_shutdown = true     # stopped by SIGTERM/SIGINT, the manager cancels its pilots

[scheduler]                     # live two-level scheduling (these are the defaults)
# policy = "pa-rr"              # fairness, paf, aaf, pa-rr, water-fill, round-robin
# second_level = "maf"          # all-core, random, maf, ca-rr
# metric = "rpa"                # throughput, epa, rpa
# workflows = "cafm-k-shelves"  # competing workflows: cafm-k-shelves, cra-work-weight, round-robin

[fairshare]
# enabled = true
# half_life_hours = 168
# [fairshare.shares]            # users not listed have 1
# alice = 2.0

[metrics]                       # who reads GET /metrics besides the admin token
# token_file = "/etc/hetpilot/metrics.token"   # a read-only token for Prometheus
# history_interval_ms = 10000   # how often the dashboard's history (GET /v1/history) is sampled

# [quotas], [limits] and [[storage]] are described in the README.
"#,
    );
    out
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.check {
        return check(&args.output);
    }
    let mut platforms = Vec::new();
    for p in &args.profiles {
        let path = std::path::absolute(p)
            .with_context(|| format!("resolving the profile path {}", p.display()))?;
        let name = profile_name(&path)?;
        if platforms.iter().any(|(n, _)| *n == name) {
            bail!("two profiles are named `{name}`");
        }
        platforms.push((name, path));
    }
    let data_dir = match &args.data_dir {
        Some(d) => std::path::absolute(d)?,
        None => default_data_dir(),
    };
    let text = starter(&args.listen, &data_dir, &platforms);
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if args.force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(&args.output).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "{} exists already (pass --force to replace it)",
                args.output.display()
            )
        } else {
            anyhow::anyhow!("writing {}: {e}", args.output.display())
        }
    })?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", args.output.display()))?;
    let shown = args.output.display();
    println!("wrote {shown}");
    println!("next: export HETPILOT_CONFIG={shown}");
    if !platforms.is_empty() {
        println!("      hetpilot platforms check     # the profiles against their batch systems");
    }
    println!("      hetpilot serve               # then `hetpilot agents`, `hetpilot status`, ...");
    Ok(())
}

/// Loads `file` as `serve` would and every profile it names; fails on the first problem.
fn check(file: &Path) -> anyhow::Result<()> {
    let settings = ManagerConfig::load(Some(file), &[])?;
    let mut profiles = 0;
    for p in &settings.platforms {
        let Some(path) = &p.profile else { continue };
        let profile = load_profile(path)
            .with_context(|| format!("platform `{}`: profile {}", p.name, path.display()))?;
        if profile.name != p.name {
            bail!(
                "platform `{}`: its profile {} is named `{}`",
                p.name,
                path.display(),
                profile.name
            );
        }
        profiles += 1;
    }
    println!(
        "{}: ok ({} platforms, {profiles} profiles)",
        file.display(),
        settings.platforms.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_starter_configuration_loads_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("manager.toml");
        let data = dir.path().join("data \"quoted\"");
        std::fs::write(&file, starter("0.0.0.0:9000", &data, &[])).unwrap();
        let s = ManagerConfig::load(Some(&file), &[]).unwrap();
        assert_eq!((s.listen.as_str(), &s.data_dir), ("0.0.0.0:9000", &data));
        assert_eq!(s.platforms.len(), 1);
        assert_eq!(s.platforms[0].name, "local");
        assert!(s.platforms[0].profile.is_none());

        let platforms = [
            ("gene".to_string(), PathBuf::from("/p/gene.toml")),
            ("darth".to_string(), PathBuf::from("/p/darth.toml")),
        ];
        std::fs::write(&file, starter("127.0.0.1:8470", &data, &platforms)).unwrap();
        let s = ManagerConfig::load(Some(&file), &[]).unwrap();
        let names: Vec<&str> = s.platforms.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["gene", "darth"]);
        assert_eq!(
            s.platforms[1].profile.as_deref(),
            Some(Path::new("/p/darth.toml"))
        );
    }

    #[test]
    fn a_profile_is_named_by_its_own_name_field_without_its_variables_set() {
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles/platforms");
        assert_eq!(
            profile_name(&shipped.join("lab-debug.toml")).unwrap(),
            "lab-debug"
        );
        assert_eq!(profile_name(&shipped.join("darth.toml")).unwrap(), "darth");
    }
}
