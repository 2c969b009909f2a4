//! The `hetpilot` binary: the command-line edge of the manager (errors through `anyhow`).

mod cli;

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = cli::Cli::parse();
    cli::init_tracing(cli.verbose);
    cli.command.run()
}
