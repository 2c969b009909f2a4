//! `hetpilot simulate`: trace-driven simulations. Without a sub-kind it runs the two-level
//! scheduling simulator (one scenario, or `--suite two-level`).

pub mod two_level;

/// Run a trace-driven simulation.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub two_level: two_level::Args,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    two_level::run(args.two_level)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        crate::cli::Cli::command().debug_assert();
    }
}
