//! `hetpilot-research simulate [--scenario FILE | --suite two-level]`: the two-level scheduling
//! simulator. One scenario × one policy combination for N seeded runs (printed, and with
//! `--out` written as a report), or the whole suite of Section 6 written as a Markdown
//! report with SVG plots and a CSV.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use hetpilot_core::sched::{
    CoRunnerAffinity, FirstLevel, PlatformAffinity, RuntimeProfile, Scheduler, SchedulerSettings,
    SecondLevel,
};
use hetpilot_research::report::two_level::{self as report, ScenarioInfo};
use hetpilot_research::sim::two_level::suite::{self, Case, Study};
use hetpilot_research::sim::two_level::{
    simulate, Arrivals, RunOutcome, Scenario, SimulationInput,
};
use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Which predefined suite to run.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Suite {
    /// The 23 scenarios of Table 8 with every policy combination of Section 6.
    TwoLevel,
}

#[derive(Debug, clap::Args)]
#[group(id = "two-level")]
pub struct Args {
    /// Scenario TOML for a single simulation.
    #[arg(
        long,
        default_value = "profiles/two-level/scenarios/default.toml",
        conflicts_with = "suite"
    )]
    pub scenario: PathBuf,
    /// Run a whole suite instead of one scenario.
    #[arg(long, value_enum)]
    pub suite: Option<Suite>,
    /// Directory of scenario TOMLs for `--suite`.
    #[arg(long, default_value = "profiles/two-level/scenarios")]
    pub scenarios: PathBuf,
    /// First-level policy: fairness, paf, aaf, pa-rr, water-fill [default: the scenario's
    /// `[scheduler]` table, else pa-rr]. The same precedence holds for every policy flag.
    #[arg(long)]
    pub first: Option<String>,
    /// Second-level policy: all-core, random, maf, ca-rr [default: maf].
    #[arg(long)]
    pub second: Option<String>,
    /// Platform-affinity metric: throughput, epa, rpa [default: rpa].
    #[arg(long)]
    pub platform_affinity: Option<String>,
    /// Co-runner-affinity metric for MAF: raw, normalized [default: normalized].
    #[arg(long)]
    pub co_runner_affinity: Option<String>,
    /// PAF/AAF top-k percent, 1-50 [default: 50].
    #[arg(long)]
    pub k: Option<u32>,
    /// PA-based RR / water-fill allocation unit D_unit in cores [default: 1].
    #[arg(long)]
    pub d_unit: Option<u32>,
    /// CA-based RR placement unit P_unit in nodes [default: 1].
    #[arg(long)]
    pub p_unit: Option<u32>,
    /// Only co-runner combinations of at most two applications.
    #[arg(long)]
    pub pairwise: bool,
    /// MAF computes co-runner affinities once per platform instead of every iteration.
    #[arg(long)]
    pub affinity_once: bool,
    /// Poisson submissions with this mean gap in seconds (overrides the scenario).
    #[arg(long)]
    pub arrival_mean: Option<f64>,
    /// Seeded runs per case [default: 10 for one scenario, 5 for a suite].
    #[arg(long)]
    pub runs: Option<usize>,
    /// Seed of the first run (run r uses seed + r, the same for every case).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output directory (suite default: docs/reproduction/two-level).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print the single-scenario result as JSON.
    #[arg(long)]
    pub json: bool,
    /// `--suite`: run only the cases the headline claims compare, and write only their
    /// table (the paper's 100 runs per case within this machine's time).
    #[arg(long)]
    pub claims_only: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(threads) = args.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
            .context("cannot start the worker threads")?;
    }
    match args.suite {
        Some(Suite::TwoLevel) => run_suite(&args),
        None => run_single(&args),
    }
}

/// A scenario file with its profile, both loaded.
struct Loaded {
    scenario: Scenario,
    profile: RuntimeProfile,
}

fn load_scenario(path: &Path) -> anyhow::Result<Loaded> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read scenario {}", path.display()))?;
    let scenario = Scenario::from_toml_str(&path.display().to_string(), &text)?;
    let profile_path = path
        .parent()
        .unwrap_or(Path::new("."))
        .join(&scenario.profile);
    let profile = crate::cli::inputs::load_profile(&profile_path)
        .with_context(|| format!("{}: field `profile`", path.display()))?;
    Ok(Loaded { scenario, profile })
}

/// Command-line flags over the scenario's `[scheduler]` table over the defaults.
fn settings(args: &Args, scenario: &Scenario) -> anyhow::Result<SchedulerSettings> {
    let mut s = scenario.scheduler_settings()?;
    if let Some(v) = &args.first {
        s.first_level = v.parse()?;
    }
    if let Some(v) = &args.second {
        s.second_level = v.parse()?;
    }
    if let Some(v) = &args.platform_affinity {
        s.platform_affinity = v.parse::<PlatformAffinity>()?;
    }
    if let Some(v) = &args.co_runner_affinity {
        s.co_runner_affinity = v.parse::<CoRunnerAffinity>()?;
    }
    if let Some(v) = args.k {
        s.top_k_percent = v;
    }
    if let Some(v) = args.d_unit {
        s.d_unit = v;
    }
    if let Some(v) = args.p_unit {
        s.p_unit = v;
    }
    s.pairwise |= args.pairwise;
    if args.affinity_once {
        s.recompute_co_runner_affinity = false;
    }
    Scheduler::new(s.clone())?;
    Ok(s)
}

fn run_case(
    input: &SimulationInput,
    settings: &SchedulerSettings,
    seed: u64,
) -> anyhow::Result<RunOutcome> {
    let scheduler = Scheduler::new(settings.clone())?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Ok(simulate(input, &scheduler, &mut rng)?)
}

fn with_arrivals<'p>(
    mut input: SimulationInput<'p>,
    mean: Option<f64>,
) -> anyhow::Result<SimulationInput<'p>> {
    if let Some(m) = mean {
        if !(m.is_finite() && m > 0.0) {
            bail!("--arrival-mean must be a positive number of seconds, got {m}");
        }
        input.arrivals = Arrivals::Poisson {
            mean_interarrival_s: m,
        };
    }
    Ok(input)
}

fn progress(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} runs, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

fn run_single(args: &Args) -> anyhow::Result<()> {
    let loaded = load_scenario(&args.scenario)?;
    let input = with_arrivals(loaded.scenario.resolve(&loaded.profile)?, args.arrival_mean)?;
    let settings = settings(args, &loaded.scenario)?;
    let runs = args.runs.unwrap_or(10).max(1);
    let baseline = SchedulerSettings {
        first_level: FirstLevel::Fairness,
        second_level: SecondLevel::AllCore,
        ..Default::default()
    };
    let cases = vec![
        Case {
            scenario: 0,
            settings: settings.clone(),
            arrival_mean_s: args.arrival_mean,
            study: Study::Policies,
        },
        Case {
            scenario: 0,
            settings: baseline,
            arrival_mean_s: args.arrival_mean,
            study: Study::Policies,
        },
    ];
    let bar = progress((runs * cases.len()) as u64, &loaded.scenario.name);
    let outcomes: Vec<Vec<RunOutcome>> = cases
        .iter()
        .map(|c| {
            (0..runs)
                .into_par_iter()
                .map(|r| {
                    let out = run_case(&input, &c.settings, args.seed + r as u64);
                    bar.inc(1);
                    out
                })
                .collect::<anyhow::Result<Vec<_>>>()
        })
        .collect::<anyhow::Result<_>>()?;
    bar.finish_and_clear();
    let results = suite::aggregate(&cases, &outcomes);
    let r = &results[0];
    let names: Vec<String> = loaded
        .scenario
        .applications
        .iter()
        .map(|a| a.name.clone())
        .collect();
    if args.json {
        let apps: Vec<serde_json::Value> = names
            .iter()
            .zip(&r.normalized)
            .map(|(n, v)| serde_json::json!({"application": n, "normalized_throughput": v}))
            .collect();
        let runs_json: Vec<serde_json::Value> = outcomes[0]
            .iter()
            .enumerate()
            .map(|(k, o)| serde_json::json!({"seed": args.seed + k as u64, "fairness": o.fairness, "makespan_s": o.makespan, "rounds": o.rounds}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "scenario": loaded.scenario.name,
                "policy": settings.label(),
                "runs": runs,
                "fairness": r.fairness,
                "fairness_sd": r.fairness_sd,
                "makespan_s": r.makespan_s,
                "efficiency": r.efficiency,
                "applications": apps,
                "per_run": runs_json,
            }))?
        );
    } else {
        println!(
            "scenario   {} ({})",
            loaded.scenario.name,
            args.scenario.display()
        );
        println!("policy     {}", settings.label());
        println!(
            "runs       {runs} (seeds {}..{})",
            args.seed,
            args.seed + runs as u64 - 1
        );
        println!("fairness   {:.4} (sd {:.4})", r.fairness, r.fairness_sd);
        println!(
            "makespan   {:.0} s ({:.2} h)",
            r.makespan_s,
            r.makespan_s / 3600.0
        );
        println!(
            "efficiency {:.4} (makespan / Fairness + AllCore's {:.0} s)",
            r.efficiency, results[1].makespan_s
        );
        println!("normalized throughput per application:");
        for (n, v) in names.iter().zip(&r.normalized) {
            println!("  {n:<16} {v:.4}");
        }
    }
    if let Some(out) = &args.out {
        let info = vec![ScenarioInfo {
            name: loaded.scenario.name.clone(),
            kind: loaded.scenario.kind.clone(),
            applications: names,
        }];
        write_report(out, &command_line(), runs, &info, &results)?;
    }
    Ok(())
}

fn run_suite(args: &Args) -> anyhow::Result<()> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&args.scenarios)
        .with_context(|| format!("cannot list scenarios in {}", args.scenarios.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        bail!("no scenario TOML files in {}", args.scenarios.display());
    }
    let loaded: Vec<Loaded> = paths
        .iter()
        .map(|p| load_scenario(p))
        .collect::<anyhow::Result<_>>()?;
    // Table 8's order: by kind, then name.
    let mut order: Vec<usize> = (0..loaded.len()).collect();
    let kind_rank = |k: &str| {
        report::KINDS
            .iter()
            .position(|x| *x == k)
            .unwrap_or(report::KINDS.len())
    };
    order.sort_by_key(|&i| {
        (
            kind_rank(&loaded[i].scenario.kind),
            loaded[i].scenario.name.clone(),
        )
    });
    let loaded: Vec<Loaded> = {
        let mut slots: Vec<Option<Loaded>> = loaded.into_iter().map(Some).collect();
        order.iter().filter_map(|&i| slots[i].take()).collect()
    };
    let inputs: Vec<SimulationInput> = loaded
        .iter()
        .map(|l| {
            // The suite sets the policies itself, but a bad `[scheduler]` table is still an error.
            l.scenario.scheduler_settings()?;
            Ok(l.scenario.resolve(&l.profile)?)
        })
        .collect::<anyhow::Result<_>>()?;
    let default = loaded.iter().position(|l| l.scenario.kind == "Default");
    let dynamic: Vec<usize> = (0..loaded.len())
        .filter(|&i| matches!(loaded[i].scenario.kind.as_str(), "Default" | "W/o App."))
        .collect();
    let mut cases = suite::cases(loaded.len(), default, &dynamic);
    if args.claims_only {
        cases.retain(hetpilot_research::report::two_level_claims::is_claim_case);
    }
    let runs = args.runs.unwrap_or(5).max(1);
    let jobs: Vec<(usize, usize)> = (0..cases.len())
        .flat_map(|c| (0..runs).map(move |r| (c, r)))
        .collect();
    let bar = progress(jobs.len() as u64, "two-level suite");
    let started = std::time::Instant::now();
    let flat: Vec<RunOutcome> = jobs
        .par_iter()
        .map(|&(c, r)| {
            let case = &cases[c];
            let input = with_arrivals(inputs[case.scenario].clone(), case.arrival_mean_s)?;
            let out = run_case(&input, &case.settings, args.seed + r as u64);
            bar.inc(1);
            out
        })
        .collect::<anyhow::Result<_>>()?;
    bar.finish_and_clear();
    tracing::info!(
        "{} runs in {:.1} s",
        jobs.len(),
        started.elapsed().as_secs_f64()
    );
    let mut outcomes: Vec<Vec<RunOutcome>> = vec![Vec::with_capacity(runs); cases.len()];
    for (&(c, _), o) in jobs.iter().zip(flat) {
        outcomes[c].push(o);
    }
    let results = suite::aggregate(&cases, &outcomes);
    let info: Vec<ScenarioInfo> = loaded
        .iter()
        .map(|l| ScenarioInfo {
            name: l.scenario.name.clone(),
            kind: l.scenario.kind.clone(),
            applications: l
                .scenario
                .applications
                .iter()
                .map(|a| a.name.clone())
                .collect(),
        })
        .collect();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("docs/reproduction/two-level"));
    if args.claims_only {
        write_claims_report(&out, &command_line(), runs, &info, &results)?;
    } else {
        write_report(&out, &command_line(), runs, &info, &results)?;
    }
    println!(
        "{} cases × {runs} runs in {:.1} s; report in {}",
        cases.len(),
        started.elapsed().as_secs_f64(),
        out.join("report.md").display()
    );
    Ok(())
}

/// The command that produced a report, without `--out DIR` and `--threads N` (where the
/// files went and how many workers ran change no number).
fn command_line() -> String {
    let mut args = std::env::args().skip(1);
    let mut kept = Vec::new();
    while let Some(a) = args.next() {
        if a == "--out" || a == "--threads" {
            args.next();
        } else if !(a.starts_with("--out=") || a.starts_with("--threads=")) {
            kept.push(a);
        }
    }
    format!("hetpilot-research {}", kept.join(" "))
}

fn write_claims_report(
    dir: &Path,
    command: &str,
    runs: usize,
    info: &[ScenarioInfo],
    results: &[suite::CaseResult],
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let report = report::claims_report(command, runs, info, results);
    std::fs::write(dir.join("report.md"), &report.markdown)
        .with_context(|| format!("cannot write {}", dir.join("report.md").display()))?;
    std::fs::write(dir.join("cases.csv"), &report.csv)
        .with_context(|| format!("cannot write {}", dir.join("cases.csv").display()))
}

fn write_report(
    dir: &Path,
    command: &str,
    runs: usize,
    info: &[ScenarioInfo],
    results: &[suite::CaseResult],
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let report = report::build(command, runs, info, results);
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    write("report.md", &report.markdown)?;
    write("cases.csv", &report.csv)?;
    for (name, svg) in &report.plots {
        write(name, svg)?;
    }
    Ok(())
}
