//! The `hetpilot` binary: the command-line edge of the manager (errors through `anyhow`).
//! An error ends the command with one line on stderr (`error: what: why`) and exit status
//! 1; `-v` adds the chain of causes and, with `RUST_BACKTRACE=1`, the backtrace. A reader
//! that closes the pipe early ends any command quietly (`cli::closed_pipe`).

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    cli::closed_pipe::exit_quietly_on_closed_pipe();
    let cli = cli::Cli::parse();
    cli::init_tracing(cli.verbose, cli.log_format);
    match cli.command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if cli::closed_pipe::is_closed_pipe(&e) => {
            ExitCode::from(cli::closed_pipe::EXIT_STATUS as u8)
        }
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
