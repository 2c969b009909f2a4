//! `hetpilot-research simulate alloc`: replay an SWF trace on a heterogeneous multi-cluster with a
//! job order (FCFS/SJF, no backfilling) and a processor allocator (BF, FF, TLPA_BJS), and
//! `--reproduce DIR`: the TLPA paper's Table II sweep (2 orders x 3 SL x 3 SH x BF, FF and
//! TLPA at depths 2-64) with its table, CSV and plots.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Args as ClapArgs;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use hetpilot_core::alloc::cluster_setup::{
    build_clusters, cluster_speeds, ordered_speeds, parse_list, SpeedOrder,
};
use hetpilot_core::alloc::workload::{jobs_from_swf, offered_load, scale_to_load, SystemLoad};
use hetpilot_core::alloc::{validate_clusters, AllocatorKind, Job, JobOrderKind};
use hetpilot_core::trace::{parse_swf, SwfOptions, SwfTrace};
use hetpilot_research::report::tlpa;
use hetpilot_research::sim::alloc::{simulate_alloc, AllocMetrics};
use hetpilot_research::sim::alloc_sweep::{improvement_table, sweep_plan, SweepPoint, SweepRun};

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
    scheduler: JobOrderKind,
    /// Processor allocator: bf, ff or tlpa.
    #[arg(long, default_value = "tlpa")]
    allocator: AllocatorKind,
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
    /// Which end of --clusters gets the fastest speed under SH: `ascending` (the last
    /// cluster fastest) or `descending` (the first fastest). The paper does not say.
    #[arg(long, default_value = "ascending")]
    speed_order: SpeedOrder,
    /// --reproduce: leave wall-clock times out (no `seconds` column, no
    /// cost_per_decision.svg), so the files depend only on the settings.
    #[arg(long)]
    no_timing: bool,
    /// Print only the figures, as JSON under `alloc`, with the keys of `hetpilot simulate
    /// live --swf --json` (which replays the same trace through the live control plane).
    #[arg(long, conflicts_with = "reproduce")]
    json: bool,
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
    if let Some(warning) = trace.stats.skipped_warning(&path.display().to_string()) {
        eprintln!("warning: {warning}");
    }
    Ok(trace)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let procs: Vec<u32> = parse_list(&args.clusters, "--clusters")?;
    let speeds = cluster_speeds(
        procs.len(),
        args.speeds.as_deref(),
        args.speed_heterogeneity,
        args.speed_order,
    )?;
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
    if !args.json {
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
    }
    if let Some(dir) = &args.reproduce {
        return reproduce(&args, &procs, &jobs, dir);
    }
    let clusters = build_clusters(&procs, &speeds);
    let scaled = scale_to_load(&jobs, &clusters, load);
    if !args.json {
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
    }
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(scaled.len() as u64).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} jobs {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        )
    };
    let order = args.scheduler.build();
    let mut allocator = args.allocator.build(args.depth)?;
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
    if args.json {
        let mut figures = serde_json::json!({ "jobs": m.jobs });
        for (name, value) in m.figures() {
            let key = name.split(" (").next().unwrap_or(name).replace(' ', "_");
            figures[key] = serde_json::json!(value);
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "alloc": figures }))?
        );
        return Ok(());
    }
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

pub(crate) fn print_metrics(m: &AllocMetrics) {
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

/// `--reproduce DIR`: runs the Table II sweep and writes `results.csv`, `table.md` and the
/// plots of `hetpilot_research::report::tlpa` into DIR.
fn reproduce(args: &Args, procs: &[u32], jobs: &[Job], dir: &Path) -> anyhow::Result<()> {
    let loads = parse_loads(&args.reproduce_loads)?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let started = Instant::now();
    let runs = run_sweep(args, procs, jobs, &sweep_plan(&loads))?;
    let total = started.elapsed().as_secs_f64();
    write_csv(&dir.join("results.csv"), &runs, !args.no_timing)?;
    let table = improvement_table(&runs, &loads);
    let md = tlpa::table_markdown(&runs, &loads, &table);
    std::fs::write(dir.join("table.md"), &md)?;
    std::fs::write(dir.join("improvement.svg"), tlpa::improvement_svg(&table)?)?;
    if !args.no_timing {
        std::fs::write(dir.join("cost_per_decision.svg"), tlpa::cost_svg(&runs)?)?;
    }
    println!("{md}");
    println!(
        "{} runs in {:.0} s wall time; wrote {}",
        runs.len(),
        total,
        dir.display()
    );
    Ok(())
}

/// `--reproduce-loads`: comma-separated loadings.
fn parse_loads(text: &str) -> anyhow::Result<Vec<SystemLoad>> {
    text.split(',')
        .map(|l| {
            SystemLoad::parse(l.trim()).with_context(|| {
                format!("--reproduce-loads: {l:?} is not low, medium, high or a positive number")
            })
        })
        .collect()
}

/// Runs every point of `plan` on `args.threads` workers (with a progress bar), timing each.
fn run_sweep(
    args: &Args,
    procs: &[u32],
    jobs: &[Job],
    plan: &[SweepPoint],
) -> anyhow::Result<Vec<SweepRun>> {
    let bar = ProgressBar::new(plan.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()?;
    let results: Vec<anyhow::Result<SweepRun>> = pool.install(|| {
        plan.par_iter()
            .map(|p| {
                let clusters =
                    build_clusters(procs, &ordered_speeds(procs.len(), p.sh, args.speed_order));
                let scaled = scale_to_load(jobs, &clusters, p.load);
                let order = p.scheduler.parse::<JobOrderKind>()?.build();
                let mut alloc = p.allocator.parse::<AllocatorKind>()?.build(p.depth)?;
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
                    scheduler: p.scheduler,
                    load: p.load,
                    sh: p.sh,
                    allocator: p.allocator,
                    depth: p.depth,
                    metrics: run.metrics,
                    seconds,
                })
            })
            .collect()
    });
    bar.finish_and_clear();
    results.into_iter().collect()
}

/// `results.csv`: every run's metrics (and wall time with `timing`), sorted by its point
/// in the sweep.
fn write_csv(path: &Path, runs: &[SweepRun], timing: bool) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    let header = [
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
    ];
    w.write_record(&header[..header.len() - usize::from(!timing)])?;
    let mut sorted: Vec<&SweepRun> = runs.iter().collect();
    sorted.sort_by(|a, b| {
        (a.scheduler, a.load.target(), a.sh, a.allocator, a.depth)
            .partial_cmp(&(b.scheduler, b.load.target(), b.sh, b.allocator, b.depth))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    for r in sorted {
        let m = &r.metrics;
        let record = [
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
        ];
        w.write_record(&record[..record.len() - usize::from(!timing)])?;
    }
    w.flush()?;
    Ok(())
}
