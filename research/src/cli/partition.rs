//! `hetpilot-research partition FILE.hgr -k K -e EPS`: partitions an hMETIS hypergraph with the
//! staging partitioner, prints km1, cut, imbalance and time, and optionally writes the
//! partition file (one block id per line, as hMETIS/KaHyPar do).

use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use hetpilot_core::staging::{hmetis, metrics, partition, PartitionSettings};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Hypergraph in hMETIS format (fmt 0, 1, 10 or 11).
    pub file: PathBuf,
    /// Number of blocks.
    #[arg(short, long)]
    pub k: usize,
    /// Allowed imbalance ε (block weight ≤ (1+ε)·⌈c(V)/k⌉).
    #[arg(short, long, default_value_t = 0.03)]
    pub epsilon: f64,
    /// Random seed (results are deterministic for a seed).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Runs of the initial bisection portfolio (more: slower, often better km1).
    #[arg(long, default_value_t = 40)]
    pub initial_runs: usize,
    /// Runs of the portfolio in the top bisection; halved per level below, never below
    /// `--initial-runs`.
    #[arg(long, default_value_t = 320)]
    pub top_initial_runs: usize,
    /// Write the partition here (one block id per line).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("cannot open {}", args.file.display()))?;
    let read_start = Instant::now();
    let hg = hmetis::read_hmetis(BufReader::new(file))
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let read_seconds = read_start.elapsed().as_secs_f64();
    tracing::info!(
        vertices = hg.num_vertices(),
        nets = hg.num_nets(),
        pins = hg.num_pins(),
        read_seconds,
        "hypergraph loaded"
    );
    let start = Instant::now();
    let mut config = PartitionSettings::new(args.k, args.epsilon, args.seed);
    config.initial_runs = args.initial_runs;
    config.top_initial_runs = args.top_initial_runs;
    let p = partition(&hg, &config)
        .with_context(|| format!("cannot partition {}", args.file.display()))?;
    let seconds = start.elapsed().as_secs_f64();
    if let Some(out) = &args.output {
        std::fs::write(out, hmetis::write_partition(&p.parts))
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    let cut = metrics::cut(&hg, &p.parts);
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "file": args.file.display().to_string(),
                "k": args.k, "epsilon": args.epsilon, "seed": args.seed,
                "vertices": hg.num_vertices(), "nets": hg.num_nets(), "pins": hg.num_pins(),
                "km1": p.km1, "cut": cut, "imbalance": p.imbalance,
                "feasible": p.feasible, "seconds": seconds,
            })
        );
    } else {
        println!(
            "hypergraph  {} vertices, {} nets, {} pins",
            hg.num_vertices(),
            hg.num_nets(),
            hg.num_pins()
        );
        println!("k           {}  (epsilon {})", args.k, args.epsilon);
        println!("km1         {}", p.km1);
        println!("cut         {cut}");
        println!(
            "imbalance   {:.5}{}",
            p.imbalance,
            if p.feasible {
                ""
            } else {
                "  (INFEASIBLE: some vertex is too heavy for the bound)"
            }
        );
        println!("time        {seconds:.3} s (partitioning only)");
    }
    if !p.feasible {
        anyhow::bail!("no partition within imbalance {} was found", args.epsilon);
    }
    Ok(())
}
