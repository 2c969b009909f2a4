//! The `hetpilot` binary: the command-line edge of the manager (errors through `anyhow`).

mod cli;
#[cfg(test)]
#[path = "fuzz.rs"]
mod fuzz;

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = cli::Cli::parse();
    cli::init_tracing(cli.verbose);
    cli.command.run()
}
