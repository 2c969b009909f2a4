//! `hetpilot simulate <kind>`: trace-driven simulations of the scheduling policies; one
//! file per kind.

mod staging;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub kind: Kind,
}

#[derive(Debug, clap::Subcommand)]
pub enum Kind {
    /// Batch-shared-I/O staging: Het-HPS vs HPS, MinMin, MaxMin, Sufferage, SJF.
    Staging(staging::Args),
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.kind {
        Kind::Staging(a) => staging::run(a),
    }
}
