//! `hetpilot-research simulate fairshare`: the multi-resource fairshare paper's Section 4 on a
//! MetaCentrum trace (Alea SWF + machines file): which jobs get a higher penalty under
//! eq. 8 than under the CPU-only penalty and by how much (Fig. 3, Fig. 4 left), and the
//! wait-time / bounded-slowdown CDFs of a single fairshare-ordered queue without backfilling
//! under each penalty (Fig. 5), with SVG plots.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args as ClapArgs;
use indicatif::{ProgressBar, ProgressStyle};

use hetpilot_core::fairshare::{priorities, CpuOnly, MultiResource, Shares};
use hetpilot_core::trace::SwfTrace;
use hetpilot_research::report::fairshare;
use hetpilot_research::sim::fairshare::{
    compare_penalties, fairshare_jobs, summarize_penalties, FairshareConversion, FairshareJob,
    PenaltyChange, PenaltySummary,
};
use hetpilot_research::sim::fairshare_queue::{
    replay_fairshare_queue, Placement, QueueReplay, QueueReplayResult,
};
use hetpilot_research::sim::fairshare_suitability::{suitability_histogram, suitability_markdown};

use super::alloc::load_swf;
use crate::cli::inputs::load_machine_pool;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Alea extended SWF trace (e.g. metacentrum/wagap-2013.swf), plain or .gz.
    #[arg(long)]
    swf: PathBuf,
    /// Platform: Alea machines file or [[machine]] TOML profile.
    #[arg(long)]
    machines: PathBuf,
    /// Properties every machine has although the machines file does not list them
    /// (the wagap clusters are x86_64 Debian nodes with NFSv4 in Brno).
    #[arg(long, default_value = "x86_64,nfs4,brno,debian,linux,infiniband")]
    site_properties: String,
    /// Usage decay half-life in days (0: no decay).
    #[arg(long, default_value_t = 7.0)]
    half_life_days: f64,
    /// Multiply walltimes by the used machine's speed (eq. 9; the paper's Fig. 5 did not).
    #[arg(long)]
    normalize_walltime: bool,
    /// Write SVG plots here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Fig. 4 (right): count, for every job, the clusters of this machines file (e.g. the
    /// 20 MetaCentrum clusters) that could run it; writes suitability.md into --out.
    #[arg(long, value_name = "FILE")]
    suitability_machines: Option<PathBuf>,
    /// Replay the trace twice, fastest machines first and slowest first, runtimes divided
    /// by the machine's speed, walltime normalization off and on: writes
    /// placement_study.md and usage_ratio_cdf.svg into --out.
    #[arg(long)]
    placement_study: bool,
    /// Reject the trace at its first malformed line.
    #[arg(long)]
    strict: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let platform = load_machine_pool(&args.machines)?.with_site_properties(
        args.site_properties
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty()),
    );
    let trace = load_swf(&args.swf, args.strict)?;
    let (jobs, conv) = fairshare_jobs(&trace, &platform);
    print_conversion(&trace, &jobs, &conv);
    let changes = compare_penalties(&platform, &jobs);
    let summary = summarize_penalties(&jobs, &changes);
    print_penalty_summary(&summary);
    let shares = Shares::default();
    let settings = |penalty| QueueReplay {
        platform: &platform,
        penalty,
        half_life: (args.half_life_days > 0.0).then_some(args.half_life_days * 86_400.0),
        shares: &shares,
        normalize_walltime: args.normalize_walltime,
        runtime_scales_with_speed: false,
        placement: Placement::FileOrder,
    };
    let cpu = replay(&settings(&CpuOnly), &jobs, "CPU-only")?;
    let multi = replay(&settings(&MultiResource), &jobs, "multi-resource")?;
    let (series_wait, series_bsld) = print_queue_outcomes(&args, &jobs, &changes, &cpu, &multi);
    print_lowest_priority_users(&cpu, &multi, &shares);
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        write_plots(
            dir,
            &summary.increases_sorted,
            &series_wait,
            &series_bsld,
            &jobs,
            &changes,
        )?;
        write_affected(&dir.join("affected_jobs.csv"), &jobs, &changes)?;
        if let Some(path) = &args.suitability_machines {
            let pool = load_machine_pool(path)?.with_site_properties(
                args.site_properties
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty()),
            );
            let histogram = suitability_histogram(&jobs, &pool);
            let md = format!(
                "Job-to-cluster suitability (Fig. 4 right): the {} jobs against the {} clusters of {}.\n\n{}",
                jobs.len(),
                pool.machines().len(),
                path.file_name().map(|f| f.to_string_lossy()).unwrap_or_default(),
                suitability_markdown(&histogram)
            );
            std::fs::write(dir.join("suitability.md"), md).with_context(|| {
                format!("cannot write {}", dir.join("suitability.md").display())
            })?;
            let file = path.file_name().map(|f| f.to_string_lossy().to_string());
            super::fairshare_speeds::write_speed_spread(
                dir,
                &jobs,
                &pool,
                file.as_deref().unwrap_or_default(),
            )?;
        }
        eprintln!("plots written to {}", dir.display());
    }
    if args.placement_study {
        super::fairshare_speeds::placement_study(args.out.as_deref(), &jobs, &platform)?;
    }
    Ok(())
}

/// How the trace's records became jobs (and why some did not).
fn print_conversion(trace: &SwfTrace, jobs: &[FairshareJob], conv: &FairshareConversion) {
    println!(
        "trace: {} records -> {} jobs ({} without runtime, {} without nodespec, {} bad nodespecs {:?}, {} unsatisfiable on the platform)",
        trace.stats.jobs,
        jobs.len(),
        conv.no_runtime,
        conv.no_nodespec,
        conv.bad_nodespec,
        conv.bad_nodespec_examples,
        conv.unsatisfiable
    );
}

fn pct(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

/// Fig. 3 / Fig. 4 left in numbers: who gets a higher penalty under eq. 8, and how much.
fn print_penalty_summary(summary: &PenaltySummary) {
    println!("\n== penalty: multi-resource (eq. 8) vs CPU-only ==");
    println!(
        "jobs with a higher penalty   {} of {} ({:.2}%), generating {:.2}% of the CPU time",
        summary.increased_jobs,
        summary.jobs,
        pct(summary.increased_jobs, summary.jobs),
        100.0 * summary.increased_cpu_time_share
    );
    println!(
        "users with such a job        {} of {} ({:.1}%)",
        summary.users_with_increase,
        summary.users,
        pct(summary.users_with_increase, summary.users)
    );
    let inc = &summary.increases_sorted;
    if !inc.is_empty() {
        let at_least = |x: f64| pct(inc.iter().filter(|&&v| v >= x).count(), inc.len());
        println!(
            "increase of P(j): median {:.0}%, p10 {:.0}%, p90 {:.0}%; >= 20%: {:.1}% of them, >= 100%: {:.1}%",
            quantile(inc, 0.5),
            quantile(inc, 0.1),
            quantile(inc, 0.9),
            at_least(20.0),
            at_least(100.0)
        );
    }
}

/// Replays the trace through the fairshare-ordered queue under one penalty, with a
/// progress bar labelled `label`.
fn replay(
    settings: &QueueReplay,
    jobs: &[FairshareJob],
    label: &str,
) -> anyhow::Result<QueueReplayResult> {
    let bar = ProgressBar::new(jobs.len() as u64).with_style(
        ProgressStyle::with_template(&format!(
            "{label:>14} {{bar:40}} {{pos}}/{{len}} jobs {{elapsed}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let out = replay_fairshare_queue(settings, jobs, &mut |n| bar.set_position(n as u64))?;
    bar.finish_and_clear();
    Ok(out)
}

/// Sorted samples of one penalty's replay, labelled, for a CDF.
type Samples = Vec<(&'static str, Vec<f64>)>;

/// Fig. 5 in numbers: wait and bounded slowdown under each penalty (and the mean wait of
/// the jobs whose penalty increased). Returns the sorted waits and slowdowns per penalty.
fn print_queue_outcomes(
    args: &Args,
    jobs: &[FairshareJob],
    changes: &[PenaltyChange],
    cpu: &QueueReplayResult,
    multi: &QueueReplayResult,
) -> (Samples, Samples) {
    println!(
        "\n== single queue ordered by fairshare, no backfilling (half-life {} days, walltime normalization {}) ==",
        args.half_life_days,
        if args.normalize_walltime { "on" } else { "off" }
    );
    println!(
        "{:<16} {:>12} {:>12} {:>12} {:>12} {:>12} {:>14}",
        "penalty",
        "mean wait s",
        "median wait",
        "p90 wait",
        "mean bsld",
        "p90 bsld",
        "affected wait"
    );
    let increased: Vec<usize> = changes
        .iter()
        .filter(|c| c.increased())
        .map(|c| c.job)
        .collect();
    let mut series_wait = Vec::new();
    let mut series_bsld = Vec::new();
    for (name, result) in [("CPU-only", cpu), ("multi-resource", multi)] {
        let outcomes = &result.outcomes;
        let mut waits: Vec<f64> = outcomes.iter().zip(jobs).map(|(o, j)| o.wait(j)).collect();
        let mut bsld: Vec<f64> = outcomes
            .iter()
            .zip(jobs)
            .map(|(o, j)| o.bounded_slowdown(j))
            .collect();
        let affected = increased
            .iter()
            .map(|&i| outcomes[i].wait(&jobs[i]))
            .sum::<f64>()
            / increased.len().max(1) as f64;
        let mean_wait = mean(&waits);
        let mean_bsld = mean(&bsld);
        waits.sort_by(f64::total_cmp);
        bsld.sort_by(f64::total_cmp);
        println!(
            "{:<16} {:>12.0} {:>12.0} {:>12.0} {:>12.2} {:>12.2} {:>14.0}",
            name,
            mean_wait,
            quantile(&waits, 0.5),
            quantile(&waits, 0.9),
            mean_bsld,
            quantile(&bsld, 0.9),
            affected
        );
        series_wait.push((name, waits));
        series_bsld.push((name, bsld));
    }
    (series_wait, series_bsld)
}

/// User priority at the end of the replay (decayed usage, equal shares): the ten
/// lowest-priority users under each penalty, side by side.
fn print_lowest_priority_users(
    cpu: &QueueReplayResult,
    multi: &QueueReplayResult,
    shares: &Shares,
) {
    let end = multi.outcomes.iter().map(|o| o.end).fold(0.0, f64::max);
    let cpu_table = priorities(&cpu.ledger, shares, [], end);
    let multi_table = priorities(&multi.ledger, shares, [], end);
    println!(
        "\n== the 10 lowest-priority users at the end of the replay (of {}; usage in decayed PE-hours, factor 2^(-U/S)) ==",
        multi_table.len()
    );
    println!(
        "{:>4}  {:<8} {:>14} {:>8}   {:<8} {:>14} {:>8}",
        "rank", "CPU-only", "decayed usage", "factor", "multi", "decayed usage", "factor"
    );
    let skip = multi_table.len().saturating_sub(10);
    for (rank, (c, m)) in cpu_table.iter().zip(&multi_table).enumerate().skip(skip) {
        println!(
            "{:>4}  {:<8} {:>14.0} {:>8.4}   {:<8} {:>14.0} {:>8.4}",
            rank + 1,
            c.user,
            c.usage / 3600.0,
            c.factor,
            m.user,
            m.usage / 3600.0,
            m.factor
        );
    }
}

/// The four SVG charts of `--out DIR`.
fn write_plots(
    dir: &Path,
    increases_sorted: &[f64],
    series_wait: &[(&str, Vec<f64>)],
    series_bsld: &[(&str, Vec<f64>)],
    jobs: &[FairshareJob],
    changes: &[PenaltyChange],
) -> anyhow::Result<()> {
    let write = |name: &str, svg: String| {
        let path = dir.join(name);
        std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))
    };
    write(
        "penalty_increase_cdf.svg",
        fairshare::cdf_svg(
            "CDF of the increase of P(j) (jobs with a higher penalty)",
            "increase of P(j) (%)",
            &[("multi-resource vs CPU-only", increases_sorted.to_vec())],
            false,
        )?,
    )?;
    write(
        "wait_cdf.svg",
        fairshare::cdf_svg(
            "CDF of wait times (fairshare queue, no backfilling)",
            "wait time (s, log)",
            series_wait,
            true,
        )?,
    )?;
    write(
        "slowdown_cdf.svg",
        fairshare::cdf_svg(
            "CDF of bounded slowdowns (fairshare queue, no backfilling)",
            "bounded slowdown (log)",
            series_bsld,
            true,
        )?,
    )?;
    write(
        "cpu_ram_jobs.svg",
        fairshare::requests_scatter_svg(jobs, changes)?,
    )
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// q-quantile of a sorted slice (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The jobs whose penalty increased: id, user, request, both penalties, increase.
fn write_affected(
    path: &Path,
    jobs: &[FairshareJob],
    changes: &[PenaltyChange],
) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record([
        "job",
        "user",
        "cpus",
        "ram_gib",
        "p_cpu",
        "p_multi_resource",
        "increase_percent",
    ])?;
    for c in changes.iter().filter(|c| c.increased()) {
        let j = &jobs[c.job];
        w.write_record([
            j.id.to_string(),
            j.user.clone(),
            j.request.total_cpus().to_string(),
            format!("{:.2}", j.request.total_ram() as f64 / (1u64 << 30) as f64),
            format!("{:.2}", c.cpu),
            format!("{:.2}", c.multi),
            format!("{:.1}", c.increase_percent()),
        ])?;
    }
    w.flush()?;
    Ok(())
}
