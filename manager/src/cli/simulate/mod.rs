//! `hetpilot simulate`: the manager's own control plane without a manager (`live`), and a
//! workflow policy's plan on workflow files (`workflows`). The research simulators
//! (two-level, alloc, fairshare, staging, PTG, variants) are `hetpilot-research simulate`.

pub mod live;
mod live_swf;
mod swf_clusters;
mod workflows;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum Kind {
    /// The live manager's own control plane with simulated agents, or a journal replayed.
    Live(Box<live::Args>),
    /// Workflow files competing for P cores under a workflow policy: what the live
    /// manager's plan predicts (stretch, makespan).
    Workflows(workflows::Args),
}

pub fn run(kind: Kind) -> anyhow::Result<()> {
    match kind {
        Kind::Live(a) => live::run(*a),
        Kind::Workflows(a) => workflows::run(a),
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
