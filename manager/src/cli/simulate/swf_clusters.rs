//! The trace and clusters of `hetpilot simulate live --swf`, read and built the way
//! `hetpilot-research simulate alloc` does (the same flags), so that both run on the same
//! jobs and clusters: the cluster list and speeds, and the SWF file (plain or `.gz`).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context};
use hetpilot::alloc::workload::heterogeneous_speeds;
use hetpilot::alloc::Cluster;
use hetpilot::trace::{parse_swf, SwfOptions, SwfTrace};

/// Which end of the cluster list is fastest under speed heterogeneity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SpeedOrder {
    Ascending,
    Descending,
}

/// SH spread over the clusters in the chosen order.
fn ordered_speeds(n: usize, sh: f64, order: SpeedOrder) -> Vec<f64> {
    let mut s = heterogeneous_speeds(n, sh);
    if order == SpeedOrder::Descending {
        s.reverse();
    }
    s
}

/// The speeds of `n` clusters: `--speeds` if given, else SH spread in `order`.
pub fn cluster_speeds(
    n: usize,
    speeds: Option<&str>,
    sh: f64,
    order: SpeedOrder,
) -> anyhow::Result<Vec<f64>> {
    match speeds {
        Some(text) => {
            let s: Vec<f64> = parse_list(text, "--speeds")?;
            if s.len() != n {
                bail!("--speeds lists {} speeds for {n} clusters", s.len());
            }
            Ok(s)
        }
        None => {
            if !(0.0..1.0).contains(&sh) {
                bail!("--speed-heterogeneity must be in [0, 1), got {sh}");
            }
            Ok(ordered_speeds(n, sh, order))
        }
    }
}

/// Read an SWF file, decompressing `.gz`.
pub fn load_swf(path: &Path, strict: bool) -> anyhow::Result<SwfTrace> {
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

pub fn parse_list<T: std::str::FromStr>(text: &str, what: &str) -> anyhow::Result<Vec<T>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<T>()
                .map_err(|_| anyhow::anyhow!("{what}: {s:?} is not a valid number"))
        })
        .collect()
}

pub fn build_clusters(procs: &[u32], speeds: &[f64]) -> Vec<Cluster> {
    procs
        .iter()
        .zip(speeds)
        .map(|(&procs, &speed)| Cluster { procs, speed })
        .collect()
}
