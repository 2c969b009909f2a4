//! Command-line interface of `hetpilot-research`: one file (or folder) per command, each
//! with its own `Args` struct and a `run` function; this file only lists them.

mod co_runner_metric;
mod inputs;
mod partition;
mod reproduce;
mod simulate;
mod staging_workload;

use clap::{Parser, Subcommand};

/// hetpilot-research: hetpilot's simulators, paper reproductions and partitioner tools.
#[derive(Debug, Parser)]
#[command(name = "hetpilot-research", version, about, propagate_version = true)]
pub struct Cli {
    /// More log output (repeat for more); `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run trace-driven simulations (two-level scheduling by default).
    Simulate(Box<simulate::Args>),
    /// Regenerate every table and figure under docs/reproduction/ from the committed
    /// experiment files in profiles/reproduction/ (`--quick --check`: the drift check).
    Reproduce(reproduce::Args),
    /// Partition an hMETIS hypergraph (km1 objective, balance bound epsilon).
    Partition(partition::Args),
    /// Generate an IMAGE or SAT staging workload (JSON and/or hMETIS).
    StagingWorkload(staging_workload::Args),
    /// MAF's platform throughput under the normalized vs the raw co-runner difference,
    /// over every subset of a profile's applications (the two-level paper, Section 6.2).
    CoRunnerMetric(co_runner_metric::Args),
}

impl Command {
    pub fn run(self) -> anyhow::Result<()> {
        match self {
            Command::Simulate(args) => simulate::run(*args),
            Command::Reproduce(args) => reproduce::run(args),
            Command::Partition(args) => partition::run(args),
            Command::StagingWorkload(args) => staging_workload::run(args),
            Command::CoRunnerMetric(args) => co_runner_metric::run(args),
        }
    }
}

/// Logs go to stderr through `tracing`; results go to stdout.
pub fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
