//! `hetpilot-research simulate staging`: plans a generated IMAGE/SAT batch with every selected
//! staging policy, simulates each plan with shared links/disks and node caches, and
//! reports batch execution time, throughput, bytes moved and planning time (table, CSV,
//! SVG plot). `--sweep` varies one parameter as in the paper's Figures 2, 3 and 5.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use hetpilot_core::staging::platforms::{four_cluster, osc_dc};
use hetpilot_core::staging::workload::{Overlap, WorkloadKind};
use hetpilot_core::staging::{StagingAlgorithm, StagingPlatform};
use hetpilot_research::report::staging::{self, SeedRun, StagingRow};
use hetpilot_research::sim::staging::simulate_staging;
use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::cli::staging_workload::{OverlapArg, WorkloadArg};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long, value_enum, default_value = "image")]
    pub workload: WorkloadArg,
    #[arg(long, value_enum, default_value = "high")]
    pub overlap: OverlapArg,
    #[arg(long, default_value_t = 2000)]
    pub tasks: usize,
    /// Platform: `4-cluster` (Section 6.3) or `osc-dc` (Section 6.2).
    #[arg(long, value_enum, default_value = "4-cluster")]
    pub config: ConfigArg,
    /// Comma-separated policies, or `all` (het-hps, het-hps-paper, hps, the paper's online
    /// minmin, maxmin, sufferage, sjf, and the clairvoyant minmin-clairvoyant,
    /// maxmin-clairvoyant, sufferage-clairvoyant).
    #[arg(long, default_value = "all")]
    pub algorithms: String,
    /// 4-cluster: compute nodes per cluster.
    #[arg(long, default_value_t = 4)]
    pub nodes_per_cluster: u32,
    /// 4-cluster: storage nodes (osc-dc always has 6).
    #[arg(long, default_value_t = 6)]
    pub storage_nodes: u32,
    /// osc-dc: OSC nodes.
    #[arg(long, default_value_t = 8)]
    pub osc_nodes: u32,
    /// osc-dc: DC nodes.
    #[arg(long, default_value_t = 4)]
    pub dc_nodes: u32,
    /// osc-dc: DC link bandwidth as a multiple of 100 Mbps.
    #[arg(long, default_value_t = 1.0)]
    pub dc_bandwidth_factor: f64,
    /// Vary one parameter (values in --values): overlap, storage-nodes,
    /// nodes-per-cluster, dc-bandwidth, osc-nodes.
    #[arg(long, value_enum)]
    pub sweep: Option<SweepArg>,
    /// Values of the swept parameter, comma-separated (overlap: high,medium,low).
    #[arg(long)]
    pub values: Option<String>,
    /// Workload seeds 1..=repeat; medians are reported.
    #[arg(long, default_value_t = 1)]
    pub repeat: u64,
    /// Write an SVG plot here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write the results as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write the paired per-seed comparisons (Het-HPS variants vs HPS and the base
    /// algorithms, mean and 95 % interval) as Markdown here.
    #[arg(long)]
    pub claims: Option<PathBuf>,
    /// Leave the planning time (wall clock) out of the table and CSV, so that the output
    /// depends only on the settings (`hetpilot-research reproduce`).
    #[arg(long)]
    pub no_timing: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ConfigArg {
    #[value(name = "4-cluster")]
    FourCluster,
    #[value(name = "osc-dc")]
    OscDc,
}

#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
pub enum SweepArg {
    Overlap,
    StorageNodes,
    NodesPerCluster,
    DcBandwidth,
    OscNodes,
}

/// One simulated setting.
#[derive(Debug, Clone)]
struct Setting {
    label: String,
    overlap: Overlap,
    platform: StagingPlatform,
    storage_nodes: u32,
}

fn settings(args: &Args) -> anyhow::Result<Vec<Setting>> {
    let base_overlap: Overlap = args.overlap.into();
    let make = |npc: u32, storage: u32, osc: u32, dcf: f64| match args.config {
        ConfigArg::FourCluster => (four_cluster(npc, storage), storage),
        ConfigArg::OscDc => (osc_dc(osc, args.dc_nodes, dcf), 6),
    };
    let Some(sweep) = args.sweep else {
        let (platform, storage_nodes) = make(
            args.nodes_per_cluster,
            args.storage_nodes,
            args.osc_nodes,
            args.dc_bandwidth_factor,
        );
        return Ok(vec![Setting {
            label: "-".into(),
            overlap: base_overlap,
            platform,
            storage_nodes,
        }]);
    };
    let values = args
        .values
        .clone()
        .context("--sweep needs --values, e.g. --values 2,4,6")?;
    let mut out = Vec::new();
    for v in values.split(',').map(str::trim) {
        let num = || {
            v.parse::<f64>()
                .with_context(|| format!("sweep value `{v}` is not a number"))
        };
        let (overlap, npc, storage, osc, dcf) = match sweep {
            SweepArg::Overlap => (
                match v {
                    "high" => Overlap::High,
                    "medium" => Overlap::Medium,
                    "low" => Overlap::Low,
                    other => bail!("overlap `{other}` is not high, medium or low"),
                },
                args.nodes_per_cluster,
                args.storage_nodes,
                args.osc_nodes,
                args.dc_bandwidth_factor,
            ),
            SweepArg::StorageNodes => (
                base_overlap,
                args.nodes_per_cluster,
                num()? as u32,
                args.osc_nodes,
                args.dc_bandwidth_factor,
            ),
            SweepArg::NodesPerCluster => (
                base_overlap,
                num()? as u32,
                args.storage_nodes,
                args.osc_nodes,
                args.dc_bandwidth_factor,
            ),
            SweepArg::DcBandwidth => (
                base_overlap,
                args.nodes_per_cluster,
                args.storage_nodes,
                args.osc_nodes,
                num()?,
            ),
            SweepArg::OscNodes => (
                base_overlap,
                args.nodes_per_cluster,
                args.storage_nodes,
                num()? as u32,
                args.dc_bandwidth_factor,
            ),
        };
        let (platform, storage_nodes) = make(npc, storage, osc, dcf);
        out.push(Setting {
            label: v.to_string(),
            overlap,
            platform,
            storage_nodes,
        });
    }
    Ok(out)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let names: Vec<StagingAlgorithm> = if args.algorithms == "all" {
        StagingAlgorithm::ALL
            .iter()
            .copied()
            .filter(|a| a.in_report())
            .collect()
    } else {
        args.algorithms
            .split(',')
            .map(|s| s.trim().parse())
            .collect::<Result<_, _>>()?
    };
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let kind: WorkloadKind = args.workload.into();
    let settings = settings(&args)?;
    let bar = ProgressBar::new((settings.len() * names.len()) as u64 * args.repeat);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")?);
    let mut rows = Vec::new();
    let mut seed_runs = Vec::new();
    for setting in &settings {
        let workloads: Vec<_> = (1..=args.repeat)
            .map(|seed| {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                kind.generate(setting.overlap, args.tasks, setting.storage_nodes, &mut rng)
            })
            .collect();
        for name in &names {
            let policy = name.build();
            let mut runs = Vec::new();
            for (i, w) in workloads.iter().enumerate() {
                bar.set_message(format!("{} {name}", setting.label));
                let start = Instant::now();
                let plan = policy
                    .plan(w, &setting.platform, i as u64 + 1)
                    .with_context(|| format!("{name} failed to plan"))?;
                let planning = start.elapsed().as_secs_f64();
                let r = simulate_staging(w, &setting.platform, &plan);
                if r.completed != w.tasks.len() {
                    bail!(
                        "{name}: simulation finished {} of {} tasks (plan incomplete)",
                        r.completed,
                        w.tasks.len()
                    );
                }
                seed_runs.push(SeedRun {
                    setting: setting.label.clone(),
                    policy: name.to_string(),
                    seed: i as u64 + 1,
                    throughput: r.throughput,
                });
                runs.push((
                    r.makespan,
                    r.throughput,
                    r.bytes_transferred as f64 / 1e9,
                    planning,
                ));
                bar.inc(1);
            }
            rows.push(StagingRow {
                setting: setting.label.clone(),
                policy: name.to_string(),
                makespan: median(runs.iter().map(|r| r.0)),
                throughput: median(runs.iter().map(|r| r.1)),
                gigabytes: median(runs.iter().map(|r| r.2)),
                planning_seconds: median(runs.iter().map(|r| r.3)),
            });
        }
    }
    bar.finish_and_clear();
    print_table(&args, &rows);
    if let Some(path) = &args.csv {
        let mut w = csv::Writer::from_path(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let mut header = vec![
            "setting",
            "algorithm",
            "batch_seconds",
            "throughput_tasks_per_s",
            "gb_transferred",
        ];
        if !args.no_timing {
            header.push("planning_seconds");
        }
        w.write_record(header)?;
        for r in &rows {
            let mut record = vec![
                r.setting.clone(),
                r.policy.clone(),
                format!("{:.2}", r.makespan),
                format!("{:.4}", r.throughput),
                format!("{:.3}", r.gigabytes),
            ];
            if !args.no_timing {
                record.push(format!("{:.4}", r.planning_seconds));
            }
            w.write_record(record)?;
        }
        w.flush()?;
    }
    if let Some(path) = &args.plot {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        plot(&args, &rows, &names, path)?;
    }
    if let Some(path) = &args.claims {
        std::fs::write(path, staging::comparisons(&seed_runs))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The setting's description, then the table of `hetpilot_research::report::staging`.
fn print_table(args: &Args, rows: &[StagingRow]) {
    println!(
        "{:?} workload, {:?} overlap, {} tasks, config {:?}{}",
        args.workload,
        args.overlap,
        args.tasks,
        args.config,
        args.sweep
            .map(|s| format!(", sweep {s:?}"))
            .unwrap_or_default()
    );
    print!("{}", staging::table(rows, !args.no_timing));
}

/// `--plot FILE`: the throughput chart, titled with the setting.
fn plot(args: &Args, rows: &[StagingRow], names: &[String], path: &PathBuf) -> anyhow::Result<()> {
    let title = format!(
        "{:?} {:?} overlap, {} tasks ({:?}){}",
        args.workload,
        args.overlap,
        args.tasks,
        args.config,
        args.sweep.map(|s| format!(" vs {s:?}")).unwrap_or_default()
    );
    let svg = staging::throughput_svg(&title, rows, names)?;
    std::fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))
}
