//! Partitioner benchmark: km1 and time of the staging partitioner on generated IMAGE and
//! SAT hypergraphs (tasks weighted by input MiB, files by KiB), k = 4, 16, 64, ε = 0.03,
//! median of 3 seeds. The side-by-side with Mt-KaHyPar is bench-tools/compare_mtkahypar.py
//! (on the .hgr files `hetpilot-research staging-workload --hgr` writes).
//!
//! `cargo bench -p hetpilot-core --bench partition` (set STAGING_BENCH_LARGE=1 to add
//! the 200,000-task SAT instance at k = 64).

use std::time::Instant;

use hetpilot_core::staging::workload::{Overlap, WorkloadKind};
use hetpilot_core::staging::{partition, PartitionSettings};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut cases = Vec::new();
    for tasks in [2000usize, 20000] {
        for kind in [WorkloadKind::Image, WorkloadKind::Sat] {
            for overlap in [Overlap::High, Overlap::Medium] {
                for k in [4usize, 16, 64] {
                    cases.push((kind, overlap, tasks, k));
                }
            }
        }
    }
    if std::env::var_os("STAGING_BENCH_LARGE").is_some() {
        cases.push((WorkloadKind::Sat, Overlap::High, 200_000, 64));
    }
    println!("instance,k,median_km1,median_seconds,max_imbalance,all_feasible");
    for (kind, overlap, tasks, k) in cases {
        let w = kind.generate(overlap, tasks, 6, &mut ChaCha8Rng::seed_from_u64(1));
        let weights = (0..w.tasks.len() as u32)
            .map(|t| (w.task_bytes(t).div_ceil(1 << 20)).max(1) as i64)
            .collect();
        let hg = w
            .hypergraph(weights)
            .expect("generated workloads are valid");
        let (mut km1, mut secs, mut imb, mut feasible) = (Vec::new(), Vec::new(), 0f64, true);
        for seed in 1..=3 {
            let start = Instant::now();
            let p = partition(&hg, &PartitionSettings::new(k, 0.03, seed)).expect("valid k");
            secs.push(start.elapsed().as_secs_f64());
            km1.push(p.km1 as f64);
            imb = imb.max(p.imbalance);
            feasible &= p.feasible;
        }
        println!(
            "{:?}_{:?}_{tasks},{k},{},{:.4},{imb:.4},{feasible}",
            kind,
            overlap,
            median(km1),
            median(secs)
        );
    }
}
