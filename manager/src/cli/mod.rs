//! Command-line interface of `hetpilot`: one file (or folder) per command, each with its own
//! `Args` struct and a `run` function; this file only lists them.

mod admin;
mod affinity;
mod affinity_devices;
mod affinity_live;
mod agent_resources;
mod app_file;
mod backup;
mod bandwidths;
mod check_output;
pub mod closed_pipe;
mod connect;
mod demo;
mod fairshare;
mod files;
mod forget;
mod host_key_report;
mod init;
mod list_pages;
mod listing;
mod log_window;
mod onboarding;
mod output;
mod pilots;
mod platforms;
mod remote_output;
mod schedule;
mod serve;
mod serve_platforms;
mod serve_tls;
mod simulate;
mod status;
mod submit;
mod submit_limit;
mod task_pages;
mod tasks;
mod usage;
mod wait_events;
mod workflow;

use clap::{Parser, Subcommand};
use std::future::Future;

/// hetpilot: a pilot-job framework for many-task applications on heterogeneous clusters.
#[derive(Debug, Parser)]
#[command(name = "hetpilot", version, about, propagate_version = true)]
pub struct Cli {
    /// More log output (repeat for more); `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Log lines on stderr as plain text (no colours unless stderr is a terminal) or as one
    /// JSON object a line.
    #[arg(long, global = true, value_enum, env = "HETPILOT_LOG_FORMAT", default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run everything locally on sample applications: manager, two platforms, report.
    Demo(demo::Args),
    /// Write a commented starter configuration for a site (for `serve` and `--config`).
    Init(init::Args),
    /// Run the manager (HTTP API, SQLite store) until SIGINT/SIGTERM.
    Serve(serve::Args),
    /// Copy the manager's database to FILE, consistently, while it runs (mode 0600).
    Backup(backup::BackupArgs),
    /// Put a backup in place of a stopped manager's database (the old one is kept aside).
    Restore(backup::RestoreArgs),
    /// Submit an application: an application file, or --each-line/--array and a command.
    Submit(Box<submit::Args>),
    /// Show applications and their task counts.
    Status(status::StatusArgs),
    /// Wait for an application to finish, with a progress bar (`--events`: print each
    /// task's end as it happens instead).
    Wait(wait_events::WaitArgs),
    /// Per-platform statistics of an application's completed tasks.
    Report(status::AppArgs),
    /// List an application's tasks.
    Tasks(tasks::TasksArgs),
    /// Show a task's runs and output.
    Logs(tasks::LogsArgs),
    /// Cancel an application: waiting tasks end, running ones are killed.
    Cancel(status::AppArgs),
    /// Manage one application; `app forget ID` forgets an ended one.
    #[command(subcommand)]
    App(forget::AppCommand),
    /// Forget every application that ended long enough ago (admin).
    Purge(forget::PurgeArgs),
    /// The live scheduler's current allocation: cores per application per platform.
    Schedule(schedule::Args),
    /// Fairshare usage (core-seconds, speed- and penalty-weighted) and priority per user.
    Usage(usage::Args),
    /// Your files in the manager's file service: `files put`, `get`, `ls`, `rm`.
    #[command(subcommand)]
    Files(files::FilesCommand),
    /// Measured transfer bandwidths per platform and storage endpoint (staging).
    Bandwidths(bandwidths::Args),
    /// Manage users (admin).
    #[command(subcommand)]
    User(admin::UserCommand),
    /// Create tokens (admin).
    #[command(subcommand)]
    Token(admin::TokenCommand),
    /// List agents (admin).
    Agents(admin::AgentsArgs),
    /// List pilots: batch jobs, states, reasons (admin).
    Pilots(pilots::Args),
    /// Platforms' provisioning status (admin); `platforms check` validates the profiles.
    Platforms(platforms::Args),
    /// Multi-resource fairshare: job penalties on a platform.
    Fairshare(fairshare::Args),
    /// Print a runtime profile's platform- and co-runner-affinity tables (Tables 3 and 4),
    /// or with `--live` the running manager's, measured online.
    Affinity(affinity::Args),
    /// Simulate the live control plane (`simulate live`) or a workflow policy (`simulate
    /// workflows`); the research simulators are `hetpilot-research simulate`.
    #[command(subcommand)]
    Simulate(simulate::Kind),
}

impl Command {
    pub fn run(self) -> anyhow::Result<()> {
        match self {
            Command::Demo(a) => block_on(demo::run(a)),
            Command::Init(a) => init::run(a),
            Command::Serve(a) => block_on(serve::run(a)),
            Command::Backup(a) => backup::backup(a),
            Command::Restore(a) => backup::restore(a),
            Command::Submit(a) => block_on(submit::run(*a)),
            Command::Status(a) => block_on(status::status(a)),
            Command::Wait(a) => block_on(wait_events::wait(a)),
            Command::Report(a) => block_on(status::report(a)),
            Command::Tasks(a) => block_on(tasks::tasks(a)),
            Command::Logs(a) => block_on(tasks::logs(a)),
            Command::Cancel(a) => block_on(status::cancel(a)),
            Command::App(c) => block_on(forget::app(c)),
            Command::Purge(a) => block_on(forget::purge(a)),
            Command::Schedule(a) => block_on(schedule::run(a)),
            Command::Usage(a) => block_on(usage::run(a)),
            Command::Files(c) => block_on(files::run(c)),
            Command::Bandwidths(a) => block_on(bandwidths::run(a)),
            Command::User(c) => block_on(admin::user(c)),
            Command::Token(c) => block_on(admin::token(c)),
            Command::Agents(a) => block_on(admin::agents(a)),
            Command::Pilots(a) => block_on(pilots::run(a)),
            Command::Platforms(a) => block_on(platforms::run(a)),
            Command::Fairshare(args) => fairshare::run(args),
            Command::Affinity(args) => affinity::run(args),
            Command::Simulate(kind) => simulate::run(kind),
        }
    }
}

/// Runs an async command on a fresh multi-threaded runtime.
fn block_on(f: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(f)
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `TIME LEVEL target: message key=value`, coloured only on a terminal.
    Text,
    /// One JSON object a line (`timestamp`, `level`, `fields`, `target`).
    Json,
}

/// Logs go to stderr through `tracing`; user-facing output goes to stdout.
pub fn init_tracing(verbose: u8, format: LogFormat) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // rustls-platform-verifier logs an ERROR of its own for a certificate it does not
    // trust; the command's error already says so, and what to do.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("{default},rustls_platform_verifier=off"))
    });
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => logs.json().init(),
    }
}
