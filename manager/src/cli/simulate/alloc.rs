//! `hetpilot simulate alloc`: replay an SWF trace on a heterogeneous multi-cluster with a
//! job order (FCFS/SJF, no backfilling) and a processor allocator (BF, FF, TLPA_BJS), and
//! `--reproduce DIR`: the TLPA paper's Table II sweep (2 orders x 3 SL x 3 SH x BF, FF and
//! TLPA at depths 2-64) with its table, CSV and plots.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args as ClapArgs;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use rayon::prelude::*;

use hetpilot::alloc::{allocator_by_name, order_by_name, validate_clusters, Cluster, Job};
use hetpilot::sim::alloc::{simulate_alloc, AllocMetrics};
use hetpilot::sim::alloc_setup::{
    heterogeneous_speeds, jobs_from_swf, offered_load, scale_to_load, SystemLoad,
};
use hetpilot::trace::{parse_swf, SwfOptions, SwfTrace};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// SWF trace (plain or .gz).
    #[arg(long)]
    swf: PathBuf,
    /// Processors per cluster, comma-separated (Table I: 8,128,128,128,50).
    #[arg(long, default_value = "8,128,128,128,50")]
    clusters: String,
    /// SH: cluster speeds spread evenly over [1-SH, 1+SH] in the order of --clusters.
    #[arg(long, default_value_t = 0.0)]
    speed_heterogeneity: f64,
    /// Explicit cluster speeds (comma-separated), overriding --speed-heterogeneity.
    #[arg(long)]
    speeds: Option<String>,
    /// SL: low (offered load 0.5), medium (0.7), high (0.9) or a number; inter-arrival
    /// times are scaled to reach it.
    #[arg(long, default_value = "high")]
    load: String,
    /// Job order: fcfs or sjf (no backfilling).
    #[arg(long, default_value = "fcfs")]
    scheduler: String,
    /// Processor allocator: bf, ff or tlpa.
    #[arg(long, default_value = "tlpa")]
    allocator: String,
    /// TLPA simulation depth d.
    #[arg(long, default_value_t = 16)]
    depth: usize,
    /// Give schedulers the real runtimes instead of the users' requested times (an
    /// ablation: the paper does not say which estimates it used).
    #[arg(long)]
    exact_estimates: bool,
    /// Use only the first N jobs of the trace.
    #[arg(long)]
    limit: Option<usize>,
    /// Reject the trace at its first malformed line (default: skip and count them).
    #[arg(long)]
    strict: bool,
    /// Run the Table II sweep and write table.md, results.csv and SVG plots into DIR.
    #[arg(long, value_name = "DIR")]
    reproduce: Option<PathBuf>,
    /// System loadings of the --reproduce sweep, comma-separated.
    #[arg(long, default_value = "low,medium,high")]
    reproduce_loads: String,
    /// Worker threads for --reproduce (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// Read an SWF file, decompressing `.gz`.
pub(crate) fn load_swf(path: &Path, strict: bool) -> anyhow::Result<SwfTrace> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let trace = parse_swf(BufReader::new(reader), SwfOptions { strict })
        .with_context(|| format!("{}", path.display()))?;
    let s = &trace.stats;
    tracing::info!(
        jobs = s.jobs,
        header = s.header_lines,
        "read {}",
        path.display()
    );
    if s.skipped_lines > 0 {
        eprintln!(
            "warning: {}: skipped {} malformed line(s), first at {:?}",
            path.display(),
            s.skipped_lines,
            s.skipped_examples
                .iter()
                .map(|(l, r)| format!("line {l}: {r}"))
                .collect::<Vec<_>>()
        );
    }
    Ok(trace)
}

fn parse_list<T: std::str::FromStr>(text: &str, what: &str) -> anyhow::Result<Vec<T>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<T>()
                .map_err(|_| anyhow::anyhow!("{what}: {s:?} is not a valid number"))
        })
        .collect()
}

fn build_clusters(procs: &[u32], speeds: &[f64]) -> Vec<Cluster> {
    procs
        .iter()
        .zip(speeds)
        .map(|(&procs, &speed)| Cluster { procs, speed })
        .collect()
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let procs: Vec<u32> = parse_list(&args.clusters, "--clusters")?;
    let speeds = match &args.speeds {
        Some(text) => {
            let s: Vec<f64> = parse_list(text, "--speeds")?;
            if s.len() != procs.len() {
                bail!(
                    "--speeds lists {} speeds for {} clusters",
                    s.len(),
                    procs.len()
                );
            }
            s
        }
        None => {
            if !(0.0..1.0).contains(&args.speed_heterogeneity) {
                bail!(
                    "--speed-heterogeneity must be in [0, 1), got {}",
                    args.speed_heterogeneity
                );
            }
            heterogeneous_speeds(procs.len(), args.speed_heterogeneity)
        }
    };
    validate_clusters(&build_clusters(&procs, &speeds))?;
    let load = SystemLoad::parse(&args.load).with_context(|| {
        format!(
            "--load {:?}: use low, medium, high or a positive number",
            args.load
        )
    })?;
    let trace = load_swf(&args.swf, args.strict)?;
    let (mut jobs, conv) = jobs_from_swf(&trace);
    if let Some(n) = args.limit {
        jobs.truncate(n);
    }
    if args.exact_estimates {
        for job in &mut jobs {
            job.estimate = job.runtime;
        }
    }
    println!(
        "trace: {} records, {} jobs simulated ({} never ran, {} without processors, {} without a requested time use their runtime, {} ran past their request); estimates: {}",
        trace.stats.jobs,
        jobs.len(),
        conv.never_ran,
        conv.no_procs,
        conv.estimate_from_runtime,
        trace.stats.overran_request,
        if args.exact_estimates { "exact runtimes" } else { "requested times" }
    );
    if let Some(dir) = &args.reproduce {
        return reproduce(&args, &procs, &jobs, dir);
    }
    let clusters = build_clusters(&procs, &speeds);
    let scaled = scale_to_load(&jobs, &clusters, load);
    println!(
        "platform: clusters {:?}, speeds {:?}; load {} (offered {:.3} -> {:.3})",
        procs,
        speeds
            .iter()
            .map(|s| (s * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>(),
        load.label(),
        offered_load(&jobs, &clusters),
        offered_load(&scaled, &clusters)
    );
    let bar = ProgressBar::new(scaled.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} jobs {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let order = order_by_name(&args.scheduler)?;
    let mut allocator = allocator_by_name(&args.allocator, args.depth)?;
    let started = Instant::now();
    let outcome = simulate_alloc(
        &clusters,
        &scaled,
        order.as_ref(),
        allocator.as_mut(),
        &mut |n| bar.set_position(n as u64),
    )?;
    let elapsed = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let m = &outcome.metrics;
    println!("{} + {}", order.name(), allocator.name());
    print_metrics(m);
    println!(
        "wall time {:.2} s, {:.2} us per decision ({} decisions, {} with a choice)",
        elapsed,
        elapsed * 1e6 / m.decisions.max(1) as f64,
        m.decisions,
        m.contested_decisions
    );
    Ok(())
}

fn print_metrics(m: &AllocMetrics) {
    println!("jobs                    {}", m.jobs);
    println!("average turnaround (s)  {:.1}", m.avg_turnaround);
    println!("average wait (s)        {:.1}", m.avg_wait);
    println!(
        "avg bounded slowdown    {:.2}   (tau = 10 s)",
        m.avg_bounded_slowdown
    );
    println!("utilization             {:.3}", m.utilization);
    println!("makespan (s)            {:.0}", m.makespan);
    println!("max queue length        {}", m.max_queue);
}

/// Table II of the TLPA paper: improvement (%) of TLPA_BJS over BF / FF, averaged over the 9
/// SL x SH combinations, for depths 2..64.
const DEPTHS: [usize; 6] = [2, 4, 8, 16, 32, 64];
const PAPER_TABLE_II: [(&str, &str, [f64; 6]); 4] = [
    ("fcfs", "bf", [1.84, 3.59, 11.79, 20.41, 25.21, 30.97]),
    ("fcfs", "ff", [10.28, 12.73, 18.20, 24.20, 27.89, 32.75]),
    ("sjf", "bf", [10.32, 10.31, 10.88, 10.77, 10.21, 11.06]),
    ("sjf", "ff", [2.97, 2.98, 3.57, 3.46, 2.96, 3.79]),
];
const HETEROGENEITIES: [f64; 3] = [0.0, 0.1, 0.2];

#[derive(Debug, Clone)]
struct SweepRun {
    scheduler: &'static str,
    load: SystemLoad,
    sh: f64,
    allocator: &'static str,
    depth: usize,
    metrics: AllocMetrics,
    seconds: f64,
}

fn reproduce(args: &Args, procs: &[u32], jobs: &[Job], dir: &Path) -> anyhow::Result<()> {
    let loads: Vec<SystemLoad> = args
        .reproduce_loads
        .split(',')
        .map(|l| {
            SystemLoad::parse(l.trim()).with_context(|| {
                format!("--reproduce-loads: {l:?} is not low, medium, high or a positive number")
            })
        })
        .collect::<anyhow::Result<_>>()?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut plan: Vec<(&'static str, SystemLoad, f64, &'static str, usize)> = Vec::new();
    for scheduler in ["fcfs", "sjf"] {
        for &load in &loads {
            for sh in HETEROGENEITIES {
                plan.push((scheduler, load, sh, "bf", 0));
                plan.push((scheduler, load, sh, "ff", 0));
                for d in DEPTHS {
                    plan.push((scheduler, load, sh, "tlpa", d));
                }
            }
        }
    }
    // Longest runs first so the pool stays busy.
    plan.sort_by_key(|p| std::cmp::Reverse(p.4));
    let bar = ProgressBar::new(plan.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()?;
    let started = Instant::now();
    let results: Vec<anyhow::Result<SweepRun>> = pool.install(|| {
        plan.par_iter()
            .map(|&(scheduler, load, sh, allocator, depth)| {
                let clusters = build_clusters(procs, &heterogeneous_speeds(procs.len(), sh));
                let scaled = scale_to_load(jobs, &clusters, load);
                let order = order_by_name(scheduler)?;
                let mut alloc = allocator_by_name(allocator, depth)?;
                let t = Instant::now();
                let run = simulate_alloc(
                    &clusters,
                    &scaled,
                    order.as_ref(),
                    alloc.as_mut(),
                    &mut |_| {},
                )?;
                let seconds = t.elapsed().as_secs_f64();
                bar.inc(1);
                Ok(SweepRun {
                    scheduler,
                    load,
                    sh,
                    allocator,
                    depth,
                    metrics: run.metrics,
                    seconds,
                })
            })
            .collect()
    });
    bar.finish_and_clear();
    let runs: Vec<SweepRun> = results.into_iter().collect::<anyhow::Result<_>>()?;
    let total = started.elapsed().as_secs_f64();
    write_csv(&dir.join("results.csv"), &runs)?;
    let table = improvement_table(&runs, &loads);
    let mut md = String::new();
    md.push_str("| order | vs | depth | ours: mean improvement (%) | ours: min..max over the SL x SH cells | paper (%) |\n|---|---|---|---|---|---|\n");
    for (scheduler, base, paper) in PAPER_TABLE_II {
        for (i, d) in DEPTHS.iter().enumerate() {
            let v = &table[&(scheduler, base, *d)];
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let (lo, hi) = v
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                    (a.min(*x), b.max(*x))
                });
            md.push_str(&format!(
                "| {} | {} | {} | {:.2} | {:.1} .. {:.1} | {:.2} |\n",
                scheduler.to_uppercase(),
                base.to_uppercase(),
                d,
                mean,
                lo,
                hi,
                paper[i]
            ));
        }
    }
    md.push_str("\nAverage turnaround time (s) per cell:\n\n| order | SL | SH | BF | FF |");
    for d in DEPTHS {
        md.push_str(&format!(" TLPA d={d} |"));
    }
    md.push_str("\n|---|---|---|---|---|");
    md.push_str(&"---|".repeat(DEPTHS.len()));
    md.push('\n');
    for scheduler in ["fcfs", "sjf"] {
        for &load in &loads {
            for sh in HETEROGENEITIES {
                let att = |a: &str, d: usize| {
                    find(&runs, scheduler, load, sh, a, d)
                        .metrics
                        .avg_turnaround
                };
                md.push_str(&format!(
                    "| {} | {} | {} | {:.0} | {:.0} |",
                    scheduler.to_uppercase(),
                    load.label(),
                    sh,
                    att("bf", 0),
                    att("ff", 0)
                ));
                for d in DEPTHS {
                    md.push_str(&format!(" {:.0} |", att("tlpa", d)));
                }
                md.push('\n');
            }
        }
    }
    std::fs::write(dir.join("table.md"), &md)?;
    plot_improvements(&dir.join("improvement.svg"), &table)?;
    plot_cost(&dir.join("cost_per_decision.svg"), &runs)?;
    println!("{md}");
    println!(
        "{} runs in {:.0} s wall time; wrote {}",
        runs.len(),
        total,
        dir.display()
    );
    Ok(())
}

fn find<'a>(
    runs: &'a [SweepRun],
    scheduler: &str,
    load: SystemLoad,
    sh: f64,
    allocator: &str,
    depth: usize,
) -> &'a SweepRun {
    runs.iter()
        .find(|r| {
            r.scheduler == scheduler
                && r.load == load
                && r.sh == sh
                && r.allocator == allocator
                && r.depth == depth
        })
        .expect("every planned run is present")
}

type Table = std::collections::BTreeMap<(&'static str, &'static str, usize), Vec<f64>>;

/// Improvement (%) of TLPA over each baseline per (order, baseline, depth), one value per
/// SL x SH cell: (ATT_base − ATT_TLPA) / ATT_base × 100.
fn improvement_table(runs: &[SweepRun], loads: &[SystemLoad]) -> Table {
    let mut table = Table::new();
    for scheduler in ["fcfs", "sjf"] {
        for base in ["bf", "ff"] {
            for d in DEPTHS {
                let mut v = Vec::new();
                for &load in loads {
                    for sh in HETEROGENEITIES {
                        let b = find(runs, scheduler, load, sh, base, 0)
                            .metrics
                            .avg_turnaround;
                        let t = find(runs, scheduler, load, sh, "tlpa", d)
                            .metrics
                            .avg_turnaround;
                        v.push((b - t) / b * 100.0);
                    }
                }
                table.insert((scheduler, base, d), v);
            }
        }
    }
    table
}

fn write_csv(path: &Path, runs: &[SweepRun]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record([
        "scheduler",
        "load",
        "sh",
        "allocator",
        "depth",
        "avg_turnaround_s",
        "avg_wait_s",
        "avg_bounded_slowdown",
        "utilization",
        "makespan_s",
        "decisions",
        "contested_decisions",
        "max_queue",
        "seconds",
    ])?;
    let mut sorted: Vec<&SweepRun> = runs.iter().collect();
    sorted.sort_by(|a, b| {
        (a.scheduler, a.load.target(), a.sh, a.allocator, a.depth)
            .partial_cmp(&(b.scheduler, b.load.target(), b.sh, b.allocator, b.depth))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    for r in sorted {
        let m = &r.metrics;
        w.write_record([
            r.scheduler.to_string(),
            r.load.label(),
            r.sh.to_string(),
            r.allocator.to_string(),
            r.depth.to_string(),
            format!("{:.1}", m.avg_turnaround),
            format!("{:.1}", m.avg_wait),
            format!("{:.3}", m.avg_bounded_slowdown),
            format!("{:.4}", m.utilization),
            format!("{:.0}", m.makespan),
            m.decisions.to_string(),
            m.contested_decisions.to_string(),
            m.max_queue.to_string(),
            format!("{:.3}", r.seconds),
        ])?;
    }
    w.flush()?;
    Ok(())
}

fn plot_improvements(path: &Path, table: &Table) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let all = table
        .values()
        .flatten()
        .copied()
        .chain(PAPER_TABLE_II.iter().flat_map(|p| p.2));
    let (lo, hi) = all.fold((0.0f64, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "TLPA_BJS improvement in average turnaround (mean over SL x SH)",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.8f64..7.2f64, (lo - 2.0).floor()..(hi + 2.0).ceil())?;
    chart
        .configure_mesh()
        .x_desc("simulation depth d")
        .y_desc("improvement (%)")
        .x_labels(6)
        .x_label_formatter(&|x| {
            let d = 2f64.powf(x.round());
            if (x - x.round()).abs() < 1e-6 {
                format!("{d}")
            } else {
                String::new()
            }
        })
        .draw()?;
    for (i, (scheduler, base, paper)) in PAPER_TABLE_II.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let ours: Vec<(f64, f64)> = DEPTHS
            .iter()
            .map(|&d| {
                let v = &table[&(*scheduler, *base, d)];
                ((d as f64).log2(), v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect();
        chart
            .draw_series(LineSeries::new(ours.clone(), color.stroke_width(2)))?
            .label(format!(
                "ours {} vs {}",
                scheduler.to_uppercase(),
                base.to_uppercase()
            ))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(ours.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        let theirs: Vec<(f64, f64)> = DEPTHS
            .iter()
            .zip(paper)
            .map(|(&d, &v)| ((d as f64).log2(), v))
            .collect();
        chart
            .draw_series(DashedLineSeries::new(theirs, 6, 4, color.stroke_width(1)))?
            .label(format!(
                "paper {} vs {}",
                scheduler.to_uppercase(),
                base.to_uppercase()
            ))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(1))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Microseconds per allocation decision of TLPA against depth (median over the SL x SH cells of
/// each depth; wall time of whole runs, so it includes the simulator's own work).
fn plot_cost(path: &Path, runs: &[SweepRun]) -> anyhow::Result<()> {
    let mut points: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for scheduler in ["fcfs", "sjf"] {
        let mut series = Vec::new();
        for d in DEPTHS {
            let mut costs: Vec<f64> = runs
                .iter()
                .filter(|r| r.scheduler == scheduler && r.allocator == "tlpa" && r.depth == d)
                .map(|r| r.seconds * 1e6 / r.metrics.decisions.max(1) as f64)
                .collect();
            costs.sort_by(f64::total_cmp);
            series.push(((d as f64).log2(), costs[costs.len() / 2]));
        }
        points.push((scheduler.to_uppercase(), series));
    }
    let hi = points
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "TLPA_BJS cost per allocation decision (median over SL x SH)",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.8f64..6.2f64, 0.0..hi * 1.15)?;
    chart
        .configure_mesh()
        .x_desc("simulation depth d")
        .y_desc("microseconds per decision")
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 {
                format!("{}", 2f64.powf(x.round()))
            } else {
                String::new()
            }
        })
        .draw()?;
    for (i, (name, series)) in points.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(series.clone(), color.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(
            series
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}
