//! `hetpilot-research co-runner-metric`: the two-level paper's Section 6.2 analysis of
//! MAF's platform throughput under the normalized against the raw co-runner difference,
//! over every subset of a profile's applications, as a Markdown table.

use std::path::PathBuf;

use hetpilot_research::co_runner_metric_study::{co_runner_metric_study, metric_study_markdown};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Runtime profile TOML (e.g. profiles/two-level/profile.toml).
    #[arg(long)]
    pub profile: PathBuf,
    /// Nodes per platform, in the profile's order (comma-separated).
    #[arg(long, value_name = "NODES", value_delimiter = ',', required = true)]
    pub nodes: Vec<u32>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let profile = super::inputs::load_profile(&args.profile)?;
    let platforms = profile.platforms().len();
    if args.nodes.len() != platforms || args.nodes.iter().any(|&n| n == 0 || n > 100_000) {
        anyhow::bail!(
            "--nodes needs one node count (1..=100000) per platform of the profile ({platforms})"
        );
    }
    let rows = co_runner_metric_study(&profile, &args.nodes);
    print!("{}", metric_study_markdown(&rows));
    Ok(())
}
