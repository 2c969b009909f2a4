//! `hetpilot simulate live`: the manager's own control plane without a manager. Runs a
//! scenario (TOML, or the live run a `hetpilot serve --journal` file records, with the
//! runtimes it measured) with simulated agents, or replays a journal and checks that
//! every lease and every round's allocation comes out as the live manager decided, or
//! replays a parallel-job trace (`--swf`, see `live_swf`).

use super::live_swf::SwfArgs;
use crate::cli::output::{millis, print_json, print_table};
use anyhow::{bail, Context};
use hetpilot::control::journal::Entry;
use hetpilot::control::simulation::{replay, simulate, Scenario, SimOutcome};
use std::io::BufRead;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["scenario", "from_journal", "replay", "swf"])))]
pub struct Args {
    /// A scenario file: `[[platform]]` (name, slots, agents_at_ms), `[[app]]` (name,
    /// owner, tasks, cores, submit_at_ms, runtime_s.PLATFORM), `[scheduler]`, `[fairshare]`,
    /// `seed`, `runtime_noise`.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Simulate the workload a journal records (its applications, agents and settings),
    /// each task running for the mean time the live run measured on its platform.
    #[arg(long, value_name = "JOURNAL")]
    pub from_journal: Option<PathBuf>,
    /// Replay a journal through a fresh control plane and check every decision.
    #[arg(long, value_name = "JOURNAL")]
    pub replay: Option<PathBuf>,
    /// Override the scenario's first-level policy (fairness, paf, aaf, pa-rr, water-fill).
    #[arg(long)]
    pub policy: Option<String>,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub swf: SwfArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.swf.swf.is_some() {
        return super::live_swf::run(&args.swf, args.policy.as_deref(), args.json);
    }
    if let Some(path) = &args.replay {
        let entries = read_journal(path)?;
        let summary = replay(entries).with_context(|| format!("replaying {}", path.display()))?;
        if args.json {
            return print_json(&serde_json::json!({
                "inputs": summary.inputs,
                "leases": summary.leases,
                "leased_tasks": summary.leased_tasks,
                "rounds": summary.rounds,
                "pilot_events": summary.pilot_events,
                "identical": true,
            }));
        }
        println!(
            "replayed {} inputs: {} leases ({} tasks), {} rounds and {} pilot events, every \
             decision identical",
            summary.inputs,
            summary.leases,
            summary.leased_tasks,
            summary.rounds,
            summary.pilot_events
        );
        return Ok(());
    }
    let mut scenario = match (&args.scenario, &args.from_journal) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            toml::from_str::<Scenario>(&text)
                .with_context(|| format!("scenario {}", path.display()))?
        }
        (None, Some(path)) => Scenario::from_journal(&read_journal(path)?)
            .with_context(|| format!("the workload of {}", path.display()))?,
        (None, None) => bail!("give --scenario, --from-journal, --replay or --swf"),
    };
    if let Some(p) = &args.policy {
        scenario.scheduler.policy = p.parse()?;
    }
    let outcome = simulate(&scenario)?;
    if args.json {
        return print_json(&outcome);
    }
    print_outcome(&scenario, &outcome);
    Ok(())
}

/// A journal's entries. A last line cut short (the manager was killed while writing it)
/// is left out; any other line that does not parse is an error naming it.
pub fn read_journal(path: &Path) -> anyhow::Result<Vec<Entry>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("opening the journal {}", path.display()))?;
    let lines: Vec<String> = std::io::BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", path.display()))?;
    let mut entries = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str::<Entry>(line) {
            Ok(e) => entries.push(e),
            Err(_) if i + 1 == lines.len() && !line.ends_with('}') => {
                eprintln!("warning: the journal's last line is cut short; it is left out");
            }
            Err(e) => bail!("{}:{}: not a journal entry: {e}", path.display(), i + 1),
        }
    }
    Ok(entries)
}

fn print_outcome(scenario: &Scenario, out: &SimOutcome) {
    let platforms: Vec<&str> = scenario.platforms.iter().map(|p| p.name.as_str()).collect();
    let mut header = vec!["APP", "FINISHED"];
    header.extend(platforms.iter().copied());
    let rows: Vec<Vec<String>> = scenario
        .apps
        .iter()
        .map(|a| {
            let mut row = vec![
                a.name.clone(),
                out.finished_ms
                    .get(&a.name)
                    .map_or("-".into(), |&ms| millis(ms as f64)),
            ];
            for p in &platforms {
                let n = out.runs.get(&a.name).and_then(|r| r.get(*p)).copied();
                row.push(n.unwrap_or(0).to_string());
            }
            row
        })
        .collect();
    println!("tasks run per platform:");
    print_table(&header, &rows);
    println!(
        "\nmakespan {}, {} rounds, {} allocation changes",
        millis(out.makespan_ms as f64),
        out.rounds,
        out.allocations.len()
    );
    if let Some(last) = out.allocations.iter().rev().find(|r| !r.apps.is_empty()) {
        println!(
            "last allocation with waiting work (at {}), cores per platform {}:",
            millis(last.at_ms as f64),
            last.platforms.join("/")
        );
        for (app, cores) in &last.apps {
            let cores: Vec<String> = cores.iter().map(u32::to_string).collect();
            println!("  {app}: {}", cores.join("/"));
        }
    }
}
