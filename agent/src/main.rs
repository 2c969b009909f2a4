//! `hetpilot-agent`: the pilot that runs on a compute node. It registers with the manager,
//! pulls tasks, runs them as real processes, measures and reports them, and drains on
//! SIGTERM or before its batch job's walltime ends.
//!
//! The registration token never appears on the command line (it would show in `ps`): it is
//! read from `--token-file` (removed once read) or the `HETPILOT_AGENT_TOKEN` environment
//! variable, and left nowhere a task can read it (see `token`, `token_file`).
//!
//! `hetpilot-agent serve-files` runs it in another role instead: a depot, the file store
//! near the storage that agents fetch inputs from and store outputs to (see `depot`).

mod agent;
mod allocation;
mod api;
mod contact;
mod corunners;
mod depot;
mod disk_full;
mod emulate;
mod executor;
mod gpu;
mod held;
mod nodefile;
mod output;
mod output_dir;
mod reporter;
mod runner;
mod sandbox;
mod sent_outputs;
mod spawn;
mod spawner;
mod staging;
mod stop_signal;
mod token;
mod token_file;
mod work_dir;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use hetpilot_protocol::protocol::RegisterRequest;
use hetpilot_protocol::resources::{self, ResourceAmount, ResourceOffer};
use hetpilot_transport::host_keys::{default_known_hosts, HostKeyCheck, HostKeyPolicy};
use hetpilot_transport::tls::ClientTrust;
use std::path::PathBuf;
use std::time::Duration;
use sysinfo::System;
use token_file::Disposal;

/// Without a subcommand the agent runs as a pilot (the flags below); `serve-files` runs it
/// as a depot (a file store) instead.
#[derive(Debug, Parser)]
#[command(
    name = "hetpilot-agent",
    version,
    about = "hetpilot pilot agent: pulls, runs and reports tasks",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    role: Option<Role>,
    #[command(flatten)]
    pilot: Args,
    /// More log output (repeat for more); `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Log lines on stderr as plain text or as one JSON object a line (with the agent's
    /// id, and at -vv each run's application, task and attempt, from their spans).
    #[arg(long, global = true, value_enum, env = "HETPILOT_LOG_FORMAT", default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// `TIME LEVEL target: message key=value`, coloured only on a terminal.
    Text,
    /// One JSON object a line (`timestamp`, `level`, `fields`, `target`, `span`, `spans`).
    Json,
}

#[derive(Debug, Subcommand)]
enum Role {
    /// Serve users' files to agents as a depot (a store of the manager's `[[storage]]`).
    ServeFiles(depot::ServeFilesArgs),
    /// Run one emulated workflow task (what `hetpilot-emulate` commands start).
    #[command(hide = true)]
    Emulate(emulate::EmulateArgs),
    /// List the GPUs this agent would offer (those its batch job granted), one a line:
    /// `INDEX UUID VENDOR DEVICE_FILE MEMORY_MIB MODEL`.
    Gpus(GpusArgs),
}

#[derive(Debug, clap::Args)]
struct GpusArgs {
    /// Print one JSON object (source, granted_by, gpus) instead of lines.
    #[arg(long)]
    json: bool,
    /// Compare the NVIDIA GPUs found with `nvidia-smi --query-gpu=name,memory.total,uuid`;
    /// each difference is printed on stderr and the exit status is 1 if there is any.
    #[arg(long)]
    check_nvidia_smi: bool,
}

#[derive(Debug, clap::Args)]
struct Args {
    /// Manager URL, e.g. http://127.0.0.1:8470
    #[arg(long, env = "HETPILOT_URL", required = true)]
    manager: Option<String>,
    /// Platform this agent belongs to (must be configured on the manager).
    #[arg(long, env = "HETPILOT_PLATFORM", required = true)]
    platform: Option<String>,
    /// File holding the agent registration token, readable by its owner only (else
    /// `HETPILOT_AGENT_TOKEN`, which the agent then drops from its environment). The agent
    /// removes it once read (empties it where it cannot; refuses to start where it can do
    /// neither), since its tasks could read it otherwise.
    #[arg(long, env = "HETPILOT_AGENT_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// Keep the token file once read. Unsafe on a pilot running tasks you do not all trust
    /// without `--sandbox bwrap`: tasks run as the agent's uid, the agent's command line
    /// (`/proc/PID/cmdline`) names the file, and a task that reads it can register agents
    /// of its own and be leased other users' tasks.
    #[arg(long, conflicts_with = "delete_token_file")]
    keep_token_file: bool,
    /// Remove the token file once read: the default, accepted for the job scripts that say so.
    #[arg(long)]
    delete_token_file: bool,
    /// Task slots (default: the cores the batch allocation gives this node, from
    /// SLURM_CPUS_ON_NODE, PBS_NUM_PPN/PBS_NP, NCPUS or LoadLeveler's task geometry; outside
    /// a batch job, the cores this agent may use).
    #[arg(long, env = "HETPILOT_SLOTS")]
    slots: Option<u32>,
    /// How tasks are isolated from each other and from the agent: `bwrap` runs each in a
    /// bubblewrap sandbox (the agent refuses to start if bwrap does not work here).
    #[arg(long, env = "HETPILOT_SANDBOX", value_enum, default_value_t = sandbox::Mode::None)]
    sandbox: sandbox::Mode,
    /// Whether to offer this node's GPUs: `auto` finds them (NVML, else nvidia-smi; AMD's
    /// through sysfs) and offers those the batch job granted; `none` offers none. Either
    /// way, every task sees only the GPUs it was granted.
    #[arg(long, env = "HETPILOT_GPUS_DETECT", value_enum, default_value_t = gpu::Detection::Auto)]
    gpus: gpu::Detection,
    /// A named resource this agent offers besides cores, memory and GPUs, e.g.
    /// `licenses=4` or `scratch_gb=500` (repeatable).
    #[arg(long = "resource", value_name = "NAME=N", value_parser = parse_resource)]
    resources: Vec<(String, ResourceAmount)>,
    /// Extra tasks fetched ahead so slots never wait on the manager (default: adaptive, a
    /// slot's worth for long tasks, up to 1024 for sub-millisecond ones; 0: none).
    #[arg(long, env = "HETPILOT_PREFETCH")]
    prefetch: Option<u32>,
    /// Run no process: each task is reported a success the moment it is leased (measures
    /// the framework's own ceiling). The manager refuses such an agent unless its
    /// configuration says `allow_zero_work = true`; its runs are marked in the store and
    /// in `hetpilot report`.
    #[arg(long)]
    zero_work: bool,
    /// CPUs this agent and its tasks are pinned to, e.g. `0` or `0-3,8` (a platform
    /// profile's `setup` line may export `HETPILOT_CPUS`).
    #[arg(long, env = "HETPILOT_CPUS")]
    cpus: Option<String>,
    /// Working directory for tasks and their output: this uid's own, writable by no one
    /// else (created with mode 0700 if missing). Default: a fresh private directory
    /// `hetpilot-agent-XXXXXX` in the temp dir.
    #[arg(long, env = "HETPILOT_WORK_DIR")]
    work_dir: Option<PathBuf>,
    /// Let the agent's group read tasks' stdout and stderr: the directories and files the
    /// agent makes for them get mode 0750 and 0640 instead of 0700 and 0600.
    #[arg(long)]
    group_readable_outputs: bool,
    /// Batch job id (default: from SLURM_JOB_ID, PBS_JOBID or LOADL_STEP_ID).
    #[arg(long, env = "HETPILOT_BATCH_JOB_ID")]
    batch_job_id: Option<String>,
    /// The pilot this agent belongs to (set by the provisioner's job script).
    #[arg(long, env = "HETPILOT_PILOT")]
    pilot: Option<String>,
    /// When the batch job's walltime ends (unix seconds).
    #[arg(long, env = "HETPILOT_WALLTIME_END")]
    walltime_end: Option<u64>,
    /// Start draining this many seconds before the walltime end.
    #[arg(long, default_value_t = 60)]
    drain_margin_secs: u64,
    /// Give up registering after this many seconds.
    #[arg(long, default_value_t = 300)]
    register_timeout_secs: u64,
    /// Stop (killing the running tasks, exit status 4) once the manager has not answered
    /// any call for this many seconds (1 to 604800): a manager restart takes far less, a
    /// manager that is gone for good must not leave this pilot holding its allocation
    /// until the walltime ends.
    #[arg(long, env = "HETPILOT_GIVE_UP_SECS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..=MAX_GIVE_UP_SECS))]
    give_up_secs: u64,
    /// Node-local cache of tasks' input files (default: WORK_DIR/cache).
    #[arg(long, env = "HETPILOT_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Most bytes the cache may hold, e.g. `500M` or `20G`.
    #[arg(long, env = "HETPILOT_CACHE_MAX", default_value = "10G")]
    cache_max: String,
    /// Private key for `sftp://` input and output files.
    #[arg(long, env = "HETPILOT_SFTP_KEY")]
    sftp_key: Option<PathBuf>,
    /// The OpenSSH known_hosts file SFTP servers' host keys are checked against (default
    /// `~/.ssh/known_hosts`); a server it does not list is refused.
    #[arg(long, env = "HETPILOT_KNOWN_HOSTS")]
    known_hosts: Option<PathBuf>,
    /// Trust an SFTP server missing from known_hosts on first contact and add its key there
    /// (like OpenSSH's `StrictHostKeyChecking accept-new`); a changed key is still refused.
    #[arg(long)]
    accept_new_host_keys: bool,
    /// PEM file of the CA (or the self-signed certificate) the manager's HTTPS certificate
    /// must chain to, instead of the system's roots.
    #[arg(long, env = "HETPILOT_CA_FILE")]
    ca_file: Option<PathBuf>,
    /// SHA-256 fingerprint of the manager's certificate to accept (what `hetpilot serve --tls
    /// self-signed` prints), instead of checking a chain.
    #[arg(long, env = "HETPILOT_TLS_FINGERPRINT")]
    tls_fingerprint: Option<String>,
}

/// `NAME=N` of `--resource`: a valid name (not `gpus`, which is detected) and amount.
fn parse_resource(s: &str) -> Result<(String, ResourceAmount), String> {
    let (name, amount) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: write NAME=N, e.g. licenses=4"))?;
    let name = name.trim();
    resources::check_name(name).map_err(|e| e.to_string())?;
    if name == resources::GPUS {
        return Err("GPUs are detected, not declared: use --gpus auto|none".into());
    }
    let x: f64 = amount
        .trim()
        .parse()
        .map_err(|_| format!("{name}: `{amount}` is not a number"))?;
    let amount = ResourceAmount::parse(x).map_err(|e| format!("{name}: {e}"))?;
    Ok((name.to_string(), amount))
}

/// The named counts of `--resource`, each name once, at most MAX_RESOURCE_NAMES.
fn named_resources(
    list: &[(String, ResourceAmount)],
) -> anyhow::Result<std::collections::BTreeMap<String, ResourceAmount>> {
    let mut named = std::collections::BTreeMap::new();
    for (name, amount) in list {
        if named.insert(name.clone(), *amount).is_some() {
            bail!("--resource {name} is given twice");
        }
    }
    if named.len() > resources::MAX_RESOURCE_NAMES {
        bail!(
            "--resource: {} names, more than the limit of {}",
            named.len(),
            resources::MAX_RESOURCE_NAMES
        );
    }
    Ok(named)
}

/// `hetpilot-agent gpus`: prints what this node would offer; with `--check-nvidia-smi`,
/// fails on any difference from nvidia-smi.
fn list_gpus(args: GpusArgs) -> anyhow::Result<()> {
    let host = System::host_name().unwrap_or_default();
    let inventory = gpu::detect(gpu::Detection::Auto, &|v| std::env::var(v).ok(), &host);
    if args.json {
        println!("{}", serde_json::to_string(&inventory)?);
    } else {
        print!("{}", gpu::check::lines(&inventory));
    }
    if args.check_nvidia_smi {
        let out = gpu::nvidia_smi::run(gpu::check::CHECK_QUERY)?
            .context("--check-nvidia-smi: no nvidia-smi on PATH")?;
        let differences = gpu::check::compare(&inventory.devices(), &out)?;
        for d in &differences {
            eprintln!("difference: {d}");
        }
        if !differences.is_empty() {
            bail!(
                "{} difference(s) between the agent's GPUs (from {}) and nvidia-smi",
                differences.len(),
                inventory.source
            );
        }
        eprintln!(
            "the agent's {} GPU(s), from {}, match nvidia-smi",
            inventory.gpus.len(),
            inventory.source
        );
    }
    Ok(())
}

fn parse_cpus(list: &str) -> anyhow::Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.parse()?, b.parse()?);
        if a > b || b >= 1024 {
            bail!("bad CPU range `{part}`");
        }
        cpus.extend(a..=b);
    }
    if cpus.is_empty() {
        bail!("empty CPU list");
    }
    Ok(cpus)
}

/// Pins this process (and so every task it starts) to `cpus`.
fn pin(cpus: &[usize]) -> anyhow::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            bail!("sched_setaffinity: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Parses a byte count: `1048576`, `512K`, `500M`, `20G`, `1T` (binary units).
fn parse_bytes(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num
        .parse()
        .with_context(|| format!("`{s}` is not a size like 500M or 20G"))?;
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        u => bail!("`{s}`: unknown unit `{u}` (use K, M, G or T)"),
    };
    n.checked_mul(1 << shift)
        .with_context(|| format!("`{s}` is too large"))
}

/// The longest `--give-up-secs`: a week.
const MAX_GIVE_UP_SECS: u64 = 7 * 24 * 3600;

/// The exit status of an agent that stopped because its manager stopped answering.
const EXIT_MANAGER_GONE: u8 = 4;

/// Whether the agent ended because its manager never answered: it was silent for
/// `--give-up-secs`, or unreachable until registration timed out.
fn manager_gone(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<api::ApiError>(),
        Some(api::ApiError::Silent { .. })
    )
}

/// A fresh random key sent with every try of this agent's registration, so a try whose
/// answer was lost gets the same agent back (see `RegisterRequest::registration_key`).
fn registration_key() -> String {
    let mut bytes = [0u8; 24];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
    hex::encode(bytes)
}

/// Runs the agent; an error ends it with one line on stderr (`error: what: why`), the
/// chain of causes and any backtrace only with `-v`.
fn main() -> std::process::ExitCode {
    // The spawn helper (see `spawner`): the agent's own binary, started by the agent.
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(spawner::HELPER_ARG)) {
        match args.next().and_then(|fd| fd.to_str()?.parse().ok()) {
            Some(fd) => spawner::serve(fd),
            None => return std::process::ExitCode::FAILURE,
        }
    }
    let cli = Cli::parse();
    let verbose = cli.verbose;
    let default = ["info", "info", "debug", "trace"][usize::from(verbose.min(3))];
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => logs.json().init(),
    }
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) if manager_gone(&e) => {
            tracing::error!("gave up on the manager: {e:#}");
            std::process::ExitCode::from(EXIT_MANAGER_GONE)
        }
        Err(e) if verbose > 0 => {
            eprintln!("error: {e:?}");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.role {
        Some(Role::ServeFiles(args)) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(depot::serve(args)),
        Some(Role::Emulate(args)) => emulate::run(args),
        Some(Role::Gpus(args)) => list_gpus(args),
        None => run_pilot(cli.pilot),
    }
}

fn run_pilot(args: Args) -> anyhow::Result<()> {
    let (Some(manager), Some(platform)) = (args.manager.clone(), args.platform.clone()) else {
        bail!("a pilot needs --manager and --platform");
    };
    // Before any thread exists: this may re-execute the agent.
    token::drop_from_environment()?;
    token::make_undumpable()?;
    let disposal = if args.keep_token_file {
        if args.token_file.is_some() && args.sandbox == sandbox::Mode::None {
            tracing::warn!(
                "--keep-token-file without --sandbox bwrap: this agent's tasks can read the \
                 token file and register agents with it"
            );
        }
        Disposal::Keep
    } else {
        Disposal::Consume
    };
    let token = token::read(args.token_file.as_deref(), disposal)?;
    // Before the spawn helper forks: it starts the tasks, which inherit its CPU affinity.
    let mut cores = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    if let Some(list) = &args.cpus {
        let cpus = parse_cpus(list).with_context(|| format!("--cpus {list}"))?;
        pin(&cpus)?;
        cores = cpus.len() as u32;
    }
    // Before any thread exists, while no task runs: the helper that starts the tasks.
    if let Err(e) = spawner::start() {
        tracing::warn!(error = %e, "no spawn helper: tasks start with posix_spawn, and their peak RSS counts the agent's");
    }
    let mut sys = System::new().context("reading this node's resources")?;
    sys.refresh_memory();
    let batch_job_id = args.batch_job_id.clone().or_else(|| {
        ["SLURM_JOB_ID", "PBS_JOBID", "LOADL_STEP_ID"]
            .iter()
            .find_map(|v| std::env::var(v).ok())
    });
    let work_dir = work_dir::prepare(args.work_dir.as_deref())?;
    if let Some(cache) = &args.cache_dir {
        work_dir::private_dir(cache, "cache dir (--cache-dir)")?;
    }
    let cache_max = parse_bytes(&args.cache_max).context("--cache-max")?;
    let staging = staging::Settings {
        trust: ClientTrust {
            ca_file: args.ca_file.clone(),
            fingerprint: args.tls_fingerprint.clone(),
        },
        cache_dir: args
            .cache_dir
            .clone()
            .unwrap_or_else(|| work_dir.join("cache")),
        cache_max,
        sftp_key: args.sftp_key.clone().map(|private_key| staging::SftpKeys {
            private_key,
            host_keys: HostKeyCheck {
                known_hosts: args.known_hosts.clone().unwrap_or_else(default_known_hosts),
                policy: if args.accept_new_host_keys {
                    HostKeyPolicy::AcceptNew
                } else {
                    HostKeyPolicy::Strict
                },
            },
        }),
    };
    let sandbox = match args.sandbox {
        sandbox::Mode::None => None,
        sandbox::Mode::Bwrap => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let mut dirs: Vec<PathBuf> = home
                .into_iter()
                .filter(|h| h.is_absolute() && h.parent().is_some() && h.is_dir())
                .collect();
            dirs.push(work_dir.clone());
            if !staging.cache_dir.starts_with(&work_dir) {
                dirs.push(staging.cache_dir.clone());
            }
            let files: Vec<PathBuf> = args
                .token_file
                .iter()
                .chain(args.sftp_key.iter())
                .cloned()
                .collect();
            let s = sandbox::Sandbox::new(&work_dir, dirs, files)?;
            tracing::info!("tasks run in a bubblewrap sandbox");
            Some(std::sync::Arc::new(s))
        }
    };
    let hostname = System::host_name().unwrap_or_else(|_| "unknown".into());
    let named = named_resources(&args.resources)?;
    let gpus = gpu::detect(args.gpus, &|v| std::env::var(v).ok(), &hostname);
    tracing::info!(
        gpus = gpus.gpus.len(),
        source = %gpus.source,
        granted_by = ?gpus.granted_by,
        "GPUs offered"
    );
    let slots = args.slots.or_else(|| {
        let (n, var) = allocation::slots(|v| std::env::var(v).ok(), &hostname)?;
        tracing::info!(slots = n, from = var, "slots from the batch allocation");
        Some(n)
    });
    let opts = agent::Options {
        sandbox,
        staging,
        manager,
        registration_token: token,
        register: RegisterRequest {
            platform,
            hostname: allocation::node_name(|v| std::env::var(v).ok(), hostname),
            cores,
            memory_mb: sys.total_memory() / (1024 * 1024),
            slots,
            batch_job_id,
            walltime_end: args.walltime_end,
            pilot: args.pilot.clone(),
            zero_work: args.zero_work,
            resources: ResourceOffer {
                gpus: gpus.devices(),
                named,
            },
            protocol_version: hetpilot_protocol::agent_version::AGENT_PROTOCOL,
            registration_key: Some(registration_key()),
        },
        gpus: std::sync::Arc::new(gpus),
        prefetch: args.prefetch,
        work_dir,
        drain_margin: Duration::from_secs(args.drain_margin_secs),
        register_timeout: Duration::from_secs(args.register_timeout_secs),
        give_up: Duration::from_secs(args.give_up_secs),
        group_readable_outputs: args.group_readable_outputs,
    };
    // One thread: the agent only waits on sockets, pipes and pidfds, and a single thread
    // avoids cross-thread wakeups on every task.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let summary = runtime.block_on(agent::run(opts))?;
    tracing::info!(
        tasks_run = summary.tasks_run,
        results_recorded = summary.results_recorded,
        results_refused = summary.results_refused,
        lost = summary.lost,
        "agent finished"
    );
    if let Some(why) = &summary.abandoned {
        tracing::error!(
            results_unreported = summary.results_unreported,
            "gave up on the manager: {why}"
        );
        std::process::exit(EXIT_MANAGER_GONE.into());
    }
    if summary.lost {
        std::process::exit(3);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{named_resources, parse_bytes, parse_cpus, Cli, Role};
    use clap::Parser;

    #[test]
    fn a_pilot_by_default_and_a_depot_on_request() {
        let pilot = Cli::try_parse_from([
            "hetpilot-agent",
            "--manager",
            "http://m:8470",
            "--platform",
            "p",
            "--slots",
            "2",
        ])
        .unwrap();
        assert!(pilot.role.is_none());
        assert_eq!(pilot.pilot.manager.as_deref(), Some("http://m:8470"));
        assert_eq!(pilot.pilot.slots, Some(2));
        let store = Cli::try_parse_from([
            "hetpilot-agent",
            "serve-files",
            "--root",
            "/data",
            "--listen",
            "0.0.0.0:8480",
            "--secret-file",
            "/etc/s",
            "-v",
        ])
        .unwrap();
        assert!(matches!(store.role, Some(Role::ServeFiles(_))));
        assert_eq!(store.verbose, 1);
        // (A missing --manager is not tried: HETPILOT_URL in the environment supplies it.)
        for bad in [
            &[
                "hetpilot-agent",
                "--manager",
                "m",
                "serve-files",
                "--root",
                "/d",
            ][..],
            &["hetpilot-agent", "serve-files", "--root", "/d"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_token_file_is_consumed_unless_kept_and_not_both() {
        let parse = |extra: &[&str]| {
            let base = ["hetpilot-agent", "--manager", "m", "--platform", "p"];
            Cli::try_parse_from(base.iter().chain(extra))
        };
        let default = parse(&["--token-file", "t"]).unwrap().pilot;
        assert!(!default.keep_token_file);
        let job_script = parse(&["--delete-token-file"]).unwrap().pilot;
        assert!(!job_script.keep_token_file);
        assert!(parse(&["--keep-token-file"]).unwrap().pilot.keep_token_file);
        assert!(parse(&["--keep-token-file", "--delete-token-file"]).is_err());
    }

    #[test]
    fn named_resources_and_gpu_detection_flags() {
        let parse = |extra: &[&str]| {
            let base = ["hetpilot-agent", "--manager", "m", "--platform", "p"];
            Cli::try_parse_from(base.iter().chain(extra)).map(|c| c.pilot)
        };
        let a = parse(&[
            "--resource",
            "licenses=4",
            "--resource",
            "scratch_gb=0.5",
            "--gpus",
            "none",
        ])
        .unwrap();
        assert_eq!(a.gpus, crate::gpu::Detection::None);
        let named = named_resources(&a.resources).unwrap();
        assert_eq!(named["licenses"].units(), 40_000);
        assert_eq!(named["scratch_gb"].to_string(), "0.5");
        assert_eq!(parse(&[]).unwrap().gpus, crate::gpu::Detection::Auto);
        for (bad, want) in [
            ("licenses", "NAME=N"),
            ("Licenses=1", "resource name"),
            ("cores=2", "resource name"),
            ("gpus=2", "--gpus auto|none"),
            ("fpga=NaN", "is not a number"),
            ("fpga=-1", "must be above 0"),
            ("fpga=18446744073709551616", "more than the limit"),
            ("fpga=x", "is not a number"),
            ("fpga=0.00001", "finer than"),
        ] {
            let err = parse(&["--resource", bad]).unwrap_err().to_string();
            assert!(err.contains(want), "{bad}: {err}");
        }
        assert!(parse(&["--gpus", "all"]).is_err());
        let twice = parse(&["--resource", "a=1", "--resource", "a=2"]).unwrap();
        assert!(named_resources(&twice.resources).is_err());
        let many: Vec<String> = (0..17).map(|i| format!("r{i}=1")).collect();
        let args: Vec<&str> = many
            .iter()
            .flat_map(|r| ["--resource", r.as_str()])
            .collect();
        assert!(named_resources(&parse(&args).unwrap().resources).is_err());
    }

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("1024").unwrap(), 1024);
        assert_eq!(parse_bytes("500M").unwrap(), 500 << 20);
        assert_eq!(parse_bytes("2GiB").unwrap(), 2 << 30);
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("3X").is_err());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("0").unwrap(), vec![0]);
        assert_eq!(parse_cpus("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_cpus("3-1").is_err());
        assert!(parse_cpus("x").is_err());
        assert!(parse_cpus("").is_err());
        // HETPILOT_CPUS comes from a job script's environment: out-of-range and
        // overflowing values are refused, never passed to CPU_SET.
        assert!(parse_cpus("1024").is_err());
        assert!(parse_cpus("0-99999999999999999999999").is_err());
        assert!(parse_cpus("0,\0").is_err());
    }
}
