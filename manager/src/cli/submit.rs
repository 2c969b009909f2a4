//! `hetpilot submit`: an application from an application file, or from flags and a command
//! (`--each-line FILE` or `--array A-B`, then `-- COMMAND...`).

use super::app_file;
use super::connect::Connect;
use super::output::print_json;
use super::status::{self, Progress};
use super::submit_limit::SubmitLimit;
use anyhow::{bail, Context};
use clap::Args as ClapArgs;
use hetpilot_protocol::resources::ResourceAmount;
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Application file (TOML); alternatively use --each-line/--array and a command.
    #[arg(conflicts_with_all = ["each_line", "array", "wfcommons", "dax"])]
    pub app_file: Option<PathBuf>,
    #[command(flatten)]
    pub workflow: super::workflow::SubmitArgs,
    /// One task per non-empty line of FILE (`{}` / `{line}` in the command).
    #[arg(long, value_name = "FILE")]
    pub each_line: Option<PathBuf>,
    /// One task per integer in a range like 1-100 (`{}` in the command).
    #[arg(long, value_name = "RANGE", conflicts_with = "each_line")]
    pub array: Option<String>,
    /// Application name (default: the command's program name).
    #[arg(long)]
    pub name: Option<String>,
    /// Cores per task.
    #[arg(long, default_value_t = 1)]
    pub cores: u32,
    /// A parallel task over N whole nodes (agents of one platform, all their slots);
    /// its first node runs the command with `HETPILOT_NODEFILE` (one `host slots=N` line
    /// per host), `HETPILOT_HOSTS` and `HETPILOT_PROCS`.
    #[arg(long, value_name = "N")]
    pub nodes: Option<u64>,
    /// A parallel task over P slots of agents of one platform (with --nodes: P / N on
    /// each node).
    #[arg(long, value_name = "P")]
    pub procs: Option<u64>,
    /// Memory per task, like 512M or 2G.
    #[arg(long)]
    pub memory: Option<String>,
    /// GPUs per task: whole devices (2) or a share of one device (0.25).
    #[arg(long, value_name = "N")]
    pub gpus: Option<f64>,
    /// A named count each task needs, as the platforms offer it (e.g. `fpga=1`); repeat.
    #[arg(long = "resource", value_name = "NAME=N")]
    pub resource: Vec<String>,
    /// Runs of a task before it is marked failed.
    #[arg(long, default_value_t = 3)]
    pub max_attempts: u32,
    /// Per-task time limit, like 90s or 10m.
    #[arg(long)]
    pub timeout: Option<String>,
    /// Environment variable for the tasks, KEY=VALUE (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory of the tasks on the node.
    #[arg(long)]
    pub workdir: Option<String>,
    /// Directory for the tasks' stdout/stderr on the node.
    #[arg(long)]
    pub output_dir: Option<String>,
    /// Wait until every task has ended (the manager answers the moment the last one is
    /// committed); exit non-zero if any failed or was cancelled.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: show a progress bar (or, off a terminal, a line every few seconds).
    #[arg(long, requires = "wait")]
    pub progress: bool,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
    /// The manager's submit limit, MiB (its `[limits] max_submit_mib`; default: that of the
    /// configuration named with --config, else the manager's default, 64). A larger
    /// application is refused before it is sent, and a WfCommons instance larger than 8
    /// times this (a DAX or application file: 4 times) before it is read.
    #[arg(long, value_name = "MIB", env = "HETPILOT_MAX_SUBMIT_MIB",
          value_parser = clap::value_parser!(u64).range(1..=16384))]
    pub max_submit_mib: Option<u64>,
    #[command(flatten)]
    pub connect: Connect,
    /// The command template, after `--`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `--resource NAME=N` flags as a `resources` table.
fn named_resources(flags: &[String]) -> anyhow::Result<BTreeMap<String, ResourceAmount>> {
    let mut named = BTreeMap::new();
    for flag in flags {
        let (name, n) = flag
            .split_once('=')
            .with_context(|| format!("--resource {flag}: expected NAME=N"))?;
        let amount = n
            .trim()
            .parse::<f64>()
            .map_err(anyhow::Error::from)
            .and_then(|x| Ok(ResourceAmount::parse(x)?))
            .with_context(|| format!("--resource {flag}"))?;
        named.insert(name.trim().to_string(), amount);
    }
    Ok(named)
}

fn from_flags(args: &Args) -> anyhow::Result<AppSpec> {
    let tasks = match (&args.each_line, &args.array) {
        (Some(f), None) => TaskSource::Lines(app_file::read_lines(f)?),
        (None, Some(r)) => app_file::parse_range(r).context("--array")?,
        _ => bail!("say what the tasks are: an application file, --each-line FILE, or --array A-B"),
    };
    if args.command.is_empty() {
        bail!("no command: put it after `--`, e.g. hetpilot submit --array 1-10 -- ./sim {{}}");
    }
    let mut env = BTreeMap::new();
    for kv in &args.env {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--env {kv}: expected KEY=VALUE"))?;
        env.insert(k.to_string(), v.to_string());
    }
    let program = std::path::Path::new(&args.command[0])
        .file_name()
        .map(|s| s.to_string_lossy().into_owned());
    let spec = AppSpec {
        name: args
            .name
            .clone()
            .or(program)
            .unwrap_or_else(|| "app".into()),
        command: shell_words::join(&args.command),
        tasks,
        cores: args.cores,
        memory_mb: args
            .memory
            .as_deref()
            .map(app_file::parse_memory_mb)
            .transpose()
            .context("--memory")?
            .unwrap_or(0),
        env,
        workdir: args.workdir.clone(),
        max_attempts: args.max_attempts,
        timeout_secs: args
            .timeout
            .as_deref()
            .map(app_file::parse_duration_secs)
            .transpose()
            .context("--timeout")?,
        output_dir: args.output_dir.clone(),
        inputs: vec![],
        outputs: vec![],
        data_intensive: false,
        dag: None,
        gpus: args
            .gpus
            .map(ResourceAmount::parse)
            .transpose()
            .context("--gpus")?,
        resources: named_resources(&args.resource)?,
        nodes: args.nodes,
        procs: args.procs,
        variants: Vec::new(),
    };
    spec.validate()?;
    Ok(spec)
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let limit = SubmitLimit::resolve(args.max_submit_mib, &args.connect)?;
    let workflow =
        super::workflow::spec_from_args(&args.workflow, args.app_file.as_deref(), &limit)?;
    let (spec, uploads) = match workflow {
        Some(w) => (w.spec, w.uploads),
        None => match &args.app_file {
            Some(f) => (app_file::load(f)?, Vec::new()),
            None => (from_flags(&args)?, Vec::new()),
        },
    };
    // Before the external inputs are stored: an application the manager would refuse
    // stores nothing.
    limit.check(&spec)?;
    let client = args.connect.client()?;
    // A workflow's external inputs are in place before any of its tasks can start.
    super::workflow::upload::upload(&client, &uploads).await?;
    let answer = client.submit(&spec).await?;
    if !args.wait {
        if args.json {
            return print_json(&answer);
        }
        println!(
            "submitted application {} ({}, {} tasks)",
            answer.app, spec.name, answer.tasks
        );
        return Ok(());
    }
    let bar = if args.progress && !args.json {
        status::progress_bar(&spec.name)
    } else {
        None
    };
    let progress = match (&bar, args.progress && !args.json) {
        (Some(bar), _) => Progress::Bar(bar),
        (None, true) => Progress::Lines,
        (None, false) => Progress::Silent,
    };
    let s = status::follow(&client, answer.app, progress).await?;
    if let Some(bar) = bar {
        bar.finish();
    }
    if args.json {
        print_json(&s)?;
    } else {
        status::print_summaries(std::slice::from_ref(&s));
    }
    status::ended_well(&s)
}
