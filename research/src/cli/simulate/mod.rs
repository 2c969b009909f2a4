//! `hetpilot-research simulate`: trace-driven simulations, one file per kind. Without a
//! sub-kind it runs the two-level scheduling simulator (one scenario, or `--suite
//! two-level`). The live control plane's own simulation is `hetpilot simulate live`.

mod alloc;
mod fairshare;
mod fairshare_speeds;
mod ptg;
mod staging;
pub mod two_level;
mod variants;

use clap::Subcommand;

/// Run a trace-driven simulation.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub kind: Option<Kind>,
    #[command(flatten)]
    pub two_level: two_level::Args,
}

#[derive(Debug, Subcommand)]
pub enum Kind {
    /// Rigid parallel jobs across heterogeneous clusters: FCFS/SJF with BF, FF or TLPA.
    Alloc(alloc::Args),
    /// Multi-resource fairshare on a MetaCentrum trace: penalties and a fairshare queue.
    Fairshare(fairshare::Args),
    /// Batch-shared-I/O staging: Het-HPS vs HPS, MinMin, MaxMin, Sufferage, SJF.
    Staging(staging::Args),
    /// Several parallel task graphs on one cluster: the 19 algorithms of the multiple-PTG
    /// paper on its 1,500 scenarios, with its figures and tables.
    Ptg(ptg::Args),
    /// GPU and CPU variants of applications: first-fit variants against affinity plans.
    Variants(variants::Args),
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.kind {
        None => two_level::run(args.two_level),
        Some(Kind::Alloc(a)) => alloc::run(a),
        Some(Kind::Fairshare(a)) => fairshare::run(a),
        Some(Kind::Staging(a)) => staging::run(a),
        Some(Kind::Ptg(a)) => ptg::run(a),
        Some(Kind::Variants(a)) => variants::run(a),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        crate::cli::Cli::command().debug_assert();
    }
}
