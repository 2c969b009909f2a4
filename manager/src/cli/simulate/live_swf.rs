//! `hetpilot simulate live --swf TRACE`: a parallel-job trace replayed through the live
//! control plane, with `hetpilot-research simulate alloc`'s settings flags (clusters,
//! speeds, load, allocator, depth, estimates, limit), so both run on the same jobs and
//! clusters and their `--json` figures compare key for key.

use super::swf_clusters::load_swf;
use crate::cli::output::{print_json, print_table};
use anyhow::{bail, Context};
use hetpilot::alloc::cluster_setup::{build_clusters, cluster_speeds, parse_list, SpeedOrder};
use hetpilot::alloc::outcome::AllocMetrics;
use hetpilot::alloc::workload::{jobs_from_swf, offered_load, scale_to_load, SystemLoad};
use hetpilot::alloc::{validate_clusters, AllocatorKind};
use hetpilot::control::simulation::{check_records, replay_trace, TraceSettings, MAX_TRACE_JOBS};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::Instant;

/// The trace and its settings; the names and defaults are `hetpilot-research simulate
/// alloc`'s.
#[derive(Debug, clap::Args)]
pub struct SwfArgs {
    /// Replay a parallel-job trace (SWF, plain or .gz): each job a parallel task of its
    /// processors, placed by the live control plane on the clusters as platforms.
    #[arg(long, value_name = "TRACE")]
    pub swf: Option<PathBuf>,
    /// Processors per cluster, comma-separated (as `hetpilot-research simulate alloc`).
    #[arg(long, default_value = "8,128,128,128,50", requires = "swf")]
    clusters: String,
    /// SH: cluster speeds spread evenly over [1-SH, 1+SH] in the order of --clusters.
    #[arg(long, default_value_t = 0.0, requires = "swf")]
    speed_heterogeneity: f64,
    /// Explicit cluster speeds (comma-separated), overriding --speed-heterogeneity.
    #[arg(long, requires = "swf")]
    speeds: Option<String>,
    /// Which end of --clusters gets the fastest speed under SH.
    #[arg(long, default_value = "ascending", requires = "swf")]
    speed_order: SpeedOrder,
    /// SL: low (offered load 0.5), medium (0.7), high (0.9) or a number.
    #[arg(long, default_value = "high", requires = "swf")]
    load: String,
    /// Job order: only fcfs (the live queues serve parallel tasks in submission order).
    #[arg(long, default_value = "fcfs", requires = "swf")]
    scheduler: String,
    /// Processor allocator of the live placement (`[scheduler] allocator`): bf, ff or tlpa.
    #[arg(long, default_value = "tlpa", requires = "swf")]
    allocator: AllocatorKind,
    /// TLPA look-ahead depth d (`[scheduler] tlpa_depth`).
    #[arg(long, default_value_t = 16, requires = "swf")]
    depth: usize,
    /// Give schedulers the real runtimes instead of the users' requested times.
    #[arg(long, requires = "swf")]
    exact_estimates: bool,
    /// Use only the first N jobs of the trace.
    #[arg(long, requires = "swf")]
    limit: Option<usize>,
    /// Reject the trace at its first malformed line (default: skip and count them).
    #[arg(long, requires = "swf")]
    strict: bool,
    /// Slots of each simulated agent (must divide every cluster's size); default: one
    /// agent per cluster with all its processors.
    #[arg(long, requires = "swf")]
    agent_slots: Option<u32>,
    /// `[scheduler] interval_ms`: longest time between two rounds while anything happens.
    #[arg(long, default_value_t = 1000, requires = "swf")]
    interval_ms: u64,
    /// `[scheduler] reservations = false`: no EASY reservations for the wide tasks.
    #[arg(long, requires = "swf")]
    no_reservations: bool,
    /// `[scheduler] seed` of the rounds.
    #[arg(long, default_value_t = 1, requires = "swf")]
    seed: u64,
}

/// Runs the replay of `args.swf` (`policy`: the first-level policy, if overridden).
pub fn run(args: &SwfArgs, policy: Option<&str>, json: bool) -> anyhow::Result<()> {
    let Some(path) = &args.swf else {
        bail!("give --swf TRACE");
    };
    if args.scheduler != "fcfs" {
        bail!(
            "--scheduler {:?}: the live queues serve parallel tasks in submission order; \
             only fcfs compares with them",
            args.scheduler
        );
    }
    let procs: Vec<u32> = parse_list(&args.clusters, "--clusters")?;
    let speeds = cluster_speeds(
        procs.len(),
        args.speeds.as_deref(),
        args.speed_heterogeneity,
        args.speed_order,
    )?;
    let clusters = build_clusters(&procs, &speeds);
    validate_clusters(&clusters)?;
    args.allocator.build(args.depth)?;
    let load = SystemLoad::parse(&args.load).with_context(|| {
        format!(
            "--load {:?}: use low, medium, high or a positive number",
            args.load
        )
    })?;
    let trace = load_swf(path, args.strict)?;
    let limit = args.limit.unwrap_or(usize::MAX);
    check_records(&trace, &clusters, limit).with_context(|| format!("{}", path.display()))?;
    let (mut jobs, _) = jobs_from_swf(&trace);
    jobs.truncate(limit);
    if jobs.len() > MAX_TRACE_JOBS {
        bail!(
            "{}: {} jobs are more than the {MAX_TRACE_JOBS} a live replay takes (use --limit)",
            path.display(),
            jobs.len()
        );
    }
    if args.exact_estimates {
        for job in &mut jobs {
            job.estimate = job.runtime;
        }
    }
    let scaled = scale_to_load(&jobs, &clusters, load);
    if !json {
        println!(
            "trace: {} jobs; clusters {:?}, speeds {:?}; load {} (offered {:.3} -> {:.3}); \
             estimates: {}",
            scaled.len(),
            procs,
            speeds
                .iter()
                .map(|s| (s * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>(),
            load.label(),
            offered_load(&jobs, &clusters),
            offered_load(&scaled, &clusters),
            if args.exact_estimates {
                "exact runtimes"
            } else {
                "requested times"
            }
        );
    }
    let mut settings = TraceSettings {
        allocator: args.allocator,
        depth: args.depth,
        agent_slots: args.agent_slots,
        interval_ms: args.interval_ms,
        reservations: !args.no_reservations,
        seed: args.seed,
        ..TraceSettings::default()
    };
    if let Some(p) = policy {
        settings.policy = p.parse()?;
    }
    let bar = if json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(scaled.len() as u64).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} jobs ended {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        )
    };
    let started = Instant::now();
    let live = replay_trace(&clusters, &scaled, &settings, &mut |n| bar.set_position(n))
        .with_context(|| format!("replaying {}", path.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    if json {
        return print_json(&serde_json::json!({ "live": metrics_json(&live.metrics) }));
    }
    println!(
        "live control plane, allocator {} (depth {}), {} jobs in {seconds:.1} s",
        args.allocator, args.depth, live.metrics.jobs
    );
    print_figures(&live.metrics);
    Ok(())
}

/// The figures by key: `jobs`, then each figure's name without its unit, spaces as
/// underscores (the keys of `hetpilot-research simulate alloc --json`).
fn metrics_json(m: &AllocMetrics) -> serde_json::Value {
    let mut out = serde_json::json!({ "jobs": m.jobs });
    for (name, value) in m.figures() {
        let key = name.split(" (").next().unwrap_or(name).replace(' ', "_");
        out[key] = serde_json::json!(value);
    }
    out
}

fn print_figures(live: &AllocMetrics) {
    let rows: Vec<Vec<String>> = live
        .figures()
        .iter()
        .map(|(name, value)| vec![name.to_string(), format!("{value:.3}")])
        .collect();
    print_table(&["", "live"], &rows);
}
