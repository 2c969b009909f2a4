//! The `hetpilot-research` binary: the command-line edge of the research crate (errors
//! through `anyhow`). It runs the simulators and writes the reproduction documents; the
//! shipped `hetpilot` binary holds what runs a site. An error ends the command with one
//! line on stderr (`error: what: why`) and exit status 1; `-v` adds the chain of causes.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    cli::init_tracing(cli.verbose);
    match cli.command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if cli.verbose > 0 {
                eprintln!("error: {e:?}");
            } else {
                eprintln!("error: {e:#}");
            }
            ExitCode::FAILURE
        }
    }
}
