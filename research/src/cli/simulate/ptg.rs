//! `hetpilot-research simulate ptg`: the multiple-PTG experiment of Casanova, Desprez and Suter
//! (§5): PTG sets drawn from the random, Strassen and FFT populations, scheduled on Table
//! 1's clusters by the 19 algorithms, with the paper's figures and tables as Markdown,
//! CSV and SVG. `--time-one` instead times every algorithm on one scenario from scratch
//! (§5.2.7).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use hetpilot_core::ptg::algorithms::{self, MultiPtgAlgorithm, PtgAlgorithm};
use hetpilot_core::ptg::hcpa::{GrowthCriterion, HcpaSettings, DEFAULT_MINIMUM_EFFICIENCY};
use hetpilot_core::ptg::Cluster;
use hetpilot_research::ptg_generator::PtgFamily;
use hetpilot_research::report::ptg::{Metric, PtgReport};
use hetpilot_research::sim::ptg::{RunRecord, Suite, SuiteSettings};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sets of PTGs drawn per family and number of PTGs (the paper: 25).
    #[arg(long, default_value_t = 25)]
    sets: usize,
    /// Numbers of concurrent PTGs (the paper: 2,4,6,8,10).
    #[arg(long, default_value = "2,4,6,8,10", value_delimiter = ',')]
    counts: Vec<usize>,
    /// PTG families: random, strassen, fft.
    #[arg(long, default_value = "random,strassen,fft", value_delimiter = ',')]
    families: Vec<FamilyArg>,
    /// Clusters of Table 1: chti (20 processors), grillon (47), grelon (120), gdx (216).
    #[arg(long, default_value = "chti,grillon,grelon,gdx", value_delimiter = ',')]
    clusters: Vec<String>,
    /// Comma-separated algorithms (e.g. SELFISH,CAFM_K_SHELVES), or `all`. SELFISH is
    /// always run: the relative figures need it.
    #[arg(long, default_value = "all")]
    algorithms: String,
    /// Seeds the PTG populations, the sets and the tie-breaking.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// HCPA's growth criterion: `gain` (CPA's and Suter's code) or `ratio` (the paper's
    /// wording, smallest T(v,p+1)/(p+1)).
    #[arg(long, value_enum, default_value = "gain")]
    growth: GrowthArg,
    /// Do not bound a precedence level's total allocation by P in HCPA.
    #[arg(long)]
    no_level_bound: bool,
    /// HCPA grows a task only while its parallel efficiency stays at least this (0: no
    /// bound). The paper does not define its improved HCPA's bound; 0.2 is where its 6%
    /// of CRA scenarios with a PTG faster than alone holds (docs/reproduction/ptg.md).
    #[arg(long, default_value_t = DEFAULT_MINIMUM_EFFICIENCY)]
    min_efficiency: f64,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Write report.md, runs.csv and the figures (SVG) into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Only time each algorithm on one scenario, from scratch (N = the largest count, the
    /// first family, the largest cluster), as §5.2.7 does.
    #[arg(long)]
    time_one: bool,
    /// Leave wall-clock times out of the report and CSV (`hetpilot-research reproduce`), so the
    /// files depend only on the settings.
    #[arg(long)]
    no_timing: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FamilyArg {
    Random,
    Strassen,
    Fft,
}

impl From<FamilyArg> for PtgFamily {
    fn from(f: FamilyArg) -> Self {
        match f {
            FamilyArg::Random => PtgFamily::Random,
            FamilyArg::Strassen => PtgFamily::Strassen,
            FamilyArg::Fft => PtgFamily::Fft,
        }
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum GrowthArg {
    Gain,
    Ratio,
}

/// The suite's settings from the command line.
fn settings(args: &Args) -> anyhow::Result<SuiteSettings> {
    let table1 = Cluster::table1();
    let mut clusters = Vec::new();
    for name in &args.clusters {
        let Some(c) = table1.iter().find(|c| &c.name == name) else {
            bail!("unknown cluster `{name}`; Table 1 has chti, grillon, grelon and gdx");
        };
        clusters.push(c.clone());
    }
    if clusters.is_empty() || args.families.is_empty() || args.counts.is_empty() {
        bail!("--clusters, --families and --counts need at least one value each");
    }
    if !(0.0..=1.0).contains(&args.min_efficiency) {
        bail!("--min-efficiency must be in [0, 1]");
    }
    if args.sets == 0 || args.counts.contains(&0) {
        bail!("--sets and every --counts value must be at least 1");
    }
    Ok(SuiteSettings {
        seed: args.seed,
        families: args.families.iter().map(|&f| f.into()).collect(),
        ptg_counts: args.counts.clone(),
        sets_per_count: args.sets,
        clusters,
        hcpa: HcpaSettings {
            criterion: match args.growth {
                GrowthArg::Gain => GrowthCriterion::LargestGain,
                GrowthArg::Ratio => GrowthCriterion::SmallestRatio,
            },
            bound_levels: !args.no_level_bound,
            minimum_efficiency: args.min_efficiency,
        },
    })
}

/// The algorithms to run, SELFISH first.
fn algorithms(spec: &str) -> anyhow::Result<Vec<Box<dyn MultiPtgAlgorithm>>> {
    let mut names: Vec<PtgAlgorithm> = if spec == "all" {
        PtgAlgorithm::ALL.to_vec()
    } else {
        spec.split(',')
            .map(|s| s.trim().to_uppercase().parse())
            .collect::<Result<_, _>>()?
    };
    if !names.contains(&PtgAlgorithm::Selfish) {
        names.insert(0, PtgAlgorithm::Selfish);
    }
    Ok(names.iter().map(|n| n.build()).collect())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let settings = settings(&args)?;
    let algorithms = algorithms(&args.algorithms)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()
        .context("cannot start the worker threads")?;
    if args.time_one {
        return time_one(settings, &algorithms);
    }
    let started = Instant::now();
    let suite = Suite::new(settings);
    let count = suite.scenarios().len();
    println!(
        "{count} scenarios ({} families x N in {:?} x {} sets x {} clusters), {} algorithms, seed {}",
        suite.settings().families.len(),
        suite.settings().ptg_counts,
        suite.settings().sets_per_count,
        suite.settings().clusters.len(),
        algorithms.len(),
        suite.settings().seed
    );
    let bar = ProgressBar::new(count as u64);
    bar.set_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} scenarios {elapsed}",
    )?);
    // Prepare every PTG on every cluster first (HCPA alone, and the moldable profile when
    // a CAFM algorithm runs), so the per-algorithm times below are scheduling only.
    let needs_profiles = algorithms.iter().any(|a| a.name().starts_with("CAFM"));
    pool.install(|| {
        (0..count).into_par_iter().for_each(|i| {
            let instance = suite.instance(i);
            if needs_profiles {
                for p in &instance.ptgs {
                    p.profile();
                }
            }
        })
    });
    let prepared = started.elapsed();
    let records: Vec<RunRecord> = pool.install(|| {
        (0..count)
            .into_par_iter()
            .flat_map_iter(|i| {
                let out: Vec<RunRecord> = algorithms
                    .iter()
                    .map(|a| {
                        let t = Instant::now();
                        let outcome = suite.run(i, a.as_ref());
                        let seconds = if args.no_timing {
                            0.0
                        } else {
                            t.elapsed().as_secs_f64()
                        };
                        RunRecord::new(&suite, i, a.name(), &outcome, seconds)
                    })
                    .collect();
                bar.inc(1);
                out
            })
            .collect()
    });
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    let threads = pool.current_num_threads();
    let mut text = format!(
        "# Multiple PTGs on one cluster: {count} scenarios, {} algorithms\n\n",
        algorithms.len(),
    );
    if !args.no_timing {
        text.push_str(&format!(
            "Suite run in {:.1} s on {threads} threads (PTG preparation: {:.1} s).\n\n",
            elapsed.as_secs_f64(),
            prepared.as_secs_f64()
        ));
    }
    text.push_str(&report_text(&PtgReport::new(&records), !args.no_timing));
    print!("{text}");
    if let Some(dir) = &args.out {
        write_outputs(dir, &records, &text)?;
        eprintln!("wrote {}", dir.display());
    }
    Ok(())
}

/// The Markdown body of the report: every table of the paper's results.
fn report_text(report: &PtgReport, timing: bool) -> String {
    let mut t = String::new();
    for (fig, metric) in [
        (2, Metric::AverageStretch),
        (3, Metric::Makespan),
        (4, Metric::MaximumStretch),
    ] {
        t.push_str(&format!(
            "## Figure {fig}: {} over all PTGs (and each family's median)\n\n{}\n",
            metric.label(),
            report.distribution_table(metric)
        ));
    }
    t.push_str(&format!(
        "## Figures 5-7: means relative to SELFISH\n\n{}\n",
        report.relative_table("SELFISH")
    ));
    t.push_str(&format!(
        "## Figure 8: mean maximum stretch by number of PTGs\n\n{}\n",
        report.by_count_table(Metric::MaximumStretch)
    ));
    t.push_str(&format!(
        "## Table 2: mean utilization (%) per cluster\n\n{}\n",
        report.utilization_table()
    ));
    t.push_str(&format!(
        "## Scheduling time (prepared PTGs) and PTGs ending sooner than alone\n\n{}",
        report.times_table(timing)
    ));
    t
}

/// `--out DIR`: report.md, runs.csv and the SVG figures.
fn write_outputs(dir: &Path, records: &[RunRecord], text: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let write = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, body).with_context(|| format!("cannot write {}", path.display()))
    };
    let report = PtgReport::new(records);
    write("report.md", text)?;
    write("runs.csv", &report.csv())?;
    write(
        "fig2-average-stretch.svg",
        &report.box_plot_svg(Metric::AverageStretch, "Figure 2: average stretch", false)?,
    )?;
    write(
        "fig3-makespan.svg",
        &report.box_plot_svg(Metric::Makespan, "Figure 3: makespan (s)", true)?,
    )?;
    write(
        "fig4-maximum-stretch.svg",
        &report.box_plot_svg(Metric::MaximumStretch, "Figure 4: maximum stretch", true)?,
    )?;
    let relative = ("mean makespan relative to SELFISH", "");
    write(
        "fig5-pareto-makespan-average-stretch.svg",
        &report.pareto_svg(
            "SELFISH",
            |r| r.makespan,
            |r| r.average_stretch,
            (relative.0, "mean average stretch relative to SELFISH"),
            "Figure 5: average stretch vs makespan",
            None,
        )?,
    )?;
    write(
        "fig6-pareto-makespan-maximum-stretch.svg",
        &report.pareto_svg(
            "SELFISH",
            |r| r.makespan,
            |r| r.maximum_stretch,
            (relative.0, "mean maximum stretch relative to SELFISH"),
            "Figure 6: maximum stretch vs makespan",
            None,
        )?,
    )?;
    write(
        "fig7-pareto-average-maximum-stretch.svg",
        &report.pareto_svg(
            "SELFISH",
            |r| r.average_stretch,
            |r| r.maximum_stretch,
            (
                "mean average stretch relative to SELFISH",
                "mean maximum stretch relative to SELFISH",
            ),
            "Figure 7: maximum stretch vs average stretch",
            None,
        )?,
    )?;
    // Fig. 8 shows the fairest algorithm of each family, plus C4 and F2 (§5.2.5).
    let fig8: Vec<String> = [
        "SELFISH",
        "SELFISH_ORDER",
        "C4",
        "F2",
        "CRA_WORK_WEIGHT",
        "CAFM_K_SHELVES",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    write(
        "fig8-maximum-stretch-by-count.svg",
        &report.by_count_svg(
            Some(&fig8),
            "Figure 8: mean maximum stretch vs number of PTGs",
        )?,
    )?;
    Ok(())
}

/// `--time-one`: each algorithm on the hardest scenario, PTGs prepared from scratch.
fn time_one(
    settings: SuiteSettings,
    algorithms: &[Box<dyn MultiPtgAlgorithm>],
) -> anyhow::Result<()> {
    let largest_count = *settings.ptg_counts.iter().max().expect("checked");
    let largest_cluster = (0..settings.clusters.len())
        .max_by_key(|&c| settings.clusters[c].processors)
        .expect("checked");
    let suite = Suite::new(SuiteSettings {
        ptg_counts: vec![largest_count],
        sets_per_count: 1,
        ..settings
    });
    let index = suite
        .scenarios()
        .iter()
        .position(|s| s.cluster == largest_cluster)
        .expect("one scenario per cluster");
    let s = &suite.scenarios()[index];
    println!(
        "one scenario: {} {} PTGs on {} ({} processors), prepared from scratch for each algorithm",
        largest_count,
        s.family.label(),
        suite.settings().clusters[largest_cluster].name,
        suite.settings().clusters[largest_cluster].processors
    );
    println!("| algorithm | seconds | of which preparing | makespan (s) | max stretch |\n|---|---:|---:|---:|---:|");
    let mut total = 0.0;
    for a in algorithms {
        let t = Instant::now();
        let instance = suite.fresh_instance(index);
        let prepared = t.elapsed().as_secs_f64();
        let outcome = algorithms::run(a.as_ref(), &instance, &mut suite.rng_for(index, a.name()));
        let seconds = t.elapsed().as_secs_f64();
        total += seconds;
        println!(
            "| {} | {seconds:.4} | {prepared:.4} | {:.1} | {:.2} |",
            a.name(),
            outcome.metrics.makespan,
            outcome.metrics.maximum_stretch
        );
    }
    println!("\nall algorithms: {total:.3} s");
    Ok(())
}
