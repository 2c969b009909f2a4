//! `hetpilot affinity`: print a profile's platform-affinity (Table 3) and co-runner-affinity
//! (Table 4) metrics.

use std::path::PathBuf;

use anyhow::Context;
use hetpilot::sched::AffinityTables;
use hetpilot::sched::RuntimeProfile;

/// Print Table 3 (throughput, EPA, RPA) and Table 4 (raw / normalized co-runner difference),
/// of a runtime profile file or (`--live`) of the running manager's online profile.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Runtime profile TOML (e.g. profiles/two-level/profile.toml).
    #[arg(long, required_unless_present = "live", conflicts_with = "live")]
    pub profile: Option<PathBuf>,
    /// Print JSON instead of text tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub live: super::affinity_live::LiveArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let Some(path) = &args.profile else {
        return super::block_on(super::affinity_live::run(args.live, args.json));
    };
    let profile = load_profile(path)?;
    let tables = AffinityTables::of(&profile);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&tables)?);
    } else {
        print!("{}", render(&tables));
    }
    Ok(())
}

/// Read and parse a profile file (errors name the file).
pub fn load_profile(path: &std::path::Path) -> anyhow::Result<RuntimeProfile> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read profile {}", path.display()))?;
    Ok(RuntimeProfile::from_toml_str(
        &path.display().to_string(),
        &text,
    )?)
}

/// Tables 3 and 4 as text.
pub fn render(t: &AffinityTables) -> String {
    let width = t
        .applications
        .iter()
        .map(|a| a.len())
        .max()
        .unwrap_or(0)
        .max(11);
    let span = 10 * t.platforms.len() - 1;
    // Two header lines: the metric names over their platform columns, then the platforms.
    let headers = |out: &mut String, names: &[&str]| {
        out.push_str(&format!("{:width$}", ""));
        for name in names {
            out.push_str(&format!(" {name:<span$}"));
        }
        out.push('\n');
        out.push_str(&format!("{:width$}", "Application"));
        for _ in names {
            for p in &t.platforms {
                out.push_str(&format!(" {p:>9}"));
            }
        }
        out.push('\n');
    };
    let mut out = String::from("Table 3: platform affinity\n");
    headers(
        &mut out,
        &[
            "Throughput (tasks/hour)",
            "Egocentric (EPA)",
            "Reciprocal (RPA)",
        ],
    );
    for (a, name) in t.applications.iter().enumerate() {
        out.push_str(&format!("{name:width$}"));
        for v in &t.throughput[a] {
            out.push_str(&format!(" {v:>9.2}"));
        }
        for table in [&t.egocentric, &t.reciprocal] {
            for v in &table[a] {
                out.push_str(&format!(" {v:>9.3}"));
            }
        }
        out.push('\n');
    }
    out.push_str("\nTable 4: co-runner affinity\n");
    headers(
        &mut out,
        &["Raw difference (s)", "Normalized difference (%)"],
    );
    for (a, name) in t.applications.iter().enumerate() {
        out.push_str(&format!("{name:width$}"));
        for table in [&t.raw_difference, &t.normalized_difference] {
            for v in &table[a] {
                match v {
                    Some(v) => out.push_str(&format!(" {v:>9.2}")),
                    None => out.push_str(&format!(" {:>9}", "-")),
                }
            }
        }
        out.push('\n');
    }
    out
}
