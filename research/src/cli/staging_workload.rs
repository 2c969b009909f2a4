//! `hetpilot-research staging-workload`: generates an IMAGE or SAT batch (paper Section 6.1) and
//! writes it as JSON and/or as an hMETIS hypergraph (tasks = vertices weighted by their
//! input MiB, files = nets weighted by size in KiB) for partitioner comparisons.

use std::path::PathBuf;

use anyhow::Context;
use hetpilot_core::staging::hmetis;
use hetpilot_core::staging::workload::{Overlap, WorkloadKind};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long, value_enum)]
    pub workload: WorkloadArg,
    #[arg(long, value_enum, default_value = "high")]
    pub overlap: OverlapArg,
    #[arg(long, default_value_t = 2000)]
    pub tasks: usize,
    #[arg(long, default_value_t = 6)]
    pub storage_nodes: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the hypergraph (hMETIS fmt 11) here.
    #[arg(long)]
    pub hgr: Option<PathBuf>,
    /// Write the workload as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum WorkloadArg {
    /// IMAGE with sliding query streams (our shape).
    Image,
    /// IMAGE with the paper's query attributes (patients, studies, modality).
    ImageQuery,
    Sat,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum OverlapArg {
    High,
    Medium,
    Low,
}

impl From<WorkloadArg> for WorkloadKind {
    fn from(w: WorkloadArg) -> Self {
        match w {
            WorkloadArg::Image => WorkloadKind::Image,
            WorkloadArg::Sat => WorkloadKind::Sat,
            WorkloadArg::ImageQuery => WorkloadKind::ImageQuery,
        }
    }
}

impl From<OverlapArg> for Overlap {
    fn from(o: OverlapArg) -> Self {
        match o {
            OverlapArg::High => Overlap::High,
            OverlapArg::Medium => Overlap::Medium,
            OverlapArg::Low => Overlap::Low,
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let kind: WorkloadKind = args.workload.into();
    let w = kind.generate(
        args.overlap.into(),
        args.tasks,
        args.storage_nodes,
        &mut rng,
    );
    println!(
        "{:?} {:?}: {} tasks, {} files, overlap {:.3}",
        kind,
        Overlap::from(args.overlap),
        w.tasks.len(),
        w.files.len(),
        w.overlap()
    );
    if let Some(path) = &args.hgr {
        let weights = (0..w.tasks.len() as u32)
            .map(|t| (w.task_bytes(t).div_ceil(1 << 20)).max(1) as i64)
            .collect();
        let hg = w.hypergraph(weights)?;
        std::fs::write(path, hmetis::write_hmetis(&hg))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string(&w)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
