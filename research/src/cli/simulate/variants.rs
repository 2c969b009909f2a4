//! `hetpilot-research simulate variants`: the variant scenario (GPU platforms beside CPU platforms,
//! applications with a GPU and a CPU variant) under first-fit variants and under each
//! first-level policy's affinity plan; prints the Markdown table.

use std::path::PathBuf;

use anyhow::Context;
use hetpilot_research::report::variants::{run_variant_scenario, variant_table};
use hetpilot_research::sim::variants::VariantScenario;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario file (platforms, applications, variants, runs, seed, policies).
    #[arg(long, default_value = "profiles/variants/gpu-speedup.toml")]
    scenario: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.scenario)
        .with_context(|| format!("cannot read {}", args.scenario.display()))?;
    let scenario =
        VariantScenario::parse(&text).with_context(|| format!("{}", args.scenario.display()))?;
    let results = run_variant_scenario(&scenario)?;
    println!(
        "{}: {} runs per placement, seeds {}..{}\n",
        scenario.name,
        scenario.runs,
        scenario.seed,
        scenario.seed.saturating_add(u64::from(scenario.runs) - 1)
    );
    print!("{}", variant_table(&scenario, &results));
    Ok(())
}
