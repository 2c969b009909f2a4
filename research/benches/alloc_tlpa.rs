//! Benchmark: TLPA_BJS cost per allocation decision as the depth d grows, and the whole
//! SDSC-SP2 run at depth 64 (the issue's < 60 s release target).
//!
//! Reads ../shared/data/swf/SDSC-SP2-1998-4.2-cln.swf.gz when present; otherwise it
//! benchmarks a synthetic workload (seeded) of the same size so it still runs anywhere.
//! Run: `cargo bench -p hetpilot-research --bench alloc_tlpa`. Prints medians of 3 runs.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use hetpilot_core::alloc::workload::{
    heterogeneous_speeds, jobs_from_swf, scale_to_load, SystemLoad,
};
use hetpilot_core::alloc::{AllocatorKind, Cluster, FcfsOrder, Job};
use hetpilot_core::trace::{parse_swf, SwfOptions};
use hetpilot_research::sim::alloc::simulate_alloc;

const RUNS: usize = 3;

fn workload() -> (Vec<Job>, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/swf/SDSC-SP2-1998-4.2-cln.swf.gz");
    if let Ok(file) = File::open(&path) {
        let trace = parse_swf(
            BufReader::new(flate2::read::MultiGzDecoder::new(file)),
            SwfOptions::default(),
        )
        .expect("SDSC-SP2 parses");
        let (jobs, _) = jobs_from_swf(&trace);
        return (
            jobs.clone(),
            format!(
                "SDSC-SP2 ({} records, {} jobs that ran)",
                trace.jobs.len(),
                jobs.len()
            ),
        );
    }
    println!(
        "note: {} not found, using a synthetic workload",
        path.display()
    );
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut t = 0.0;
    let jobs = (0..54_044)
        .map(|i| {
            t += rng.random_range(0.0..1200.0);
            let runtime = rng.random_range(10.0..20_000.0f64);
            Job {
                id: i,
                submit: t,
                procs: 1 << rng.random_range(0..7),
                runtime,
                estimate: runtime * rng.random_range(1.0..4.0),
            }
        })
        .collect();
    (jobs, "synthetic (54,044 jobs)".into())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (jobs, label) = workload();
    let procs = [8u32, 128, 128, 128, 50];
    let speeds = heterogeneous_speeds(procs.len(), 0.2);
    let clusters: Vec<Cluster> = procs
        .iter()
        .zip(&speeds)
        .map(|(&procs, &speed)| Cluster { procs, speed })
        .collect();
    let scaled = scale_to_load(&jobs, &clusters, SystemLoad::High);
    println!("workload: {label}; FCFS, SL high, SH 0.2, clusters 8,128,128,128,50");
    println!(
        "{:<10} {:>12} {:>16} {:>18} {:>12}",
        "allocator", "run (s)", "us / decision", "us / contested", "ATT (s)"
    );
    let mut plan = vec![
        (AllocatorKind::BestFit, 0),
        (AllocatorKind::FastestFirst, 0),
    ];
    plan.extend([0, 2, 4, 8, 16, 32, 64].map(|d| (AllocatorKind::Tlpa, d)));
    for (name, depth) in plan {
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..RUNS {
            let mut allocator = name.build(depth).expect("a depth within bounds");
            let t = Instant::now();
            let run = simulate_alloc(
                &clusters,
                &scaled,
                &FcfsOrder,
                allocator.as_mut(),
                &mut |_| {},
            )
            .expect("valid workload");
            times.push(t.elapsed().as_secs_f64());
            last = Some(run.metrics);
        }
        let m = last.expect("at least one run");
        let t = median(times);
        let label = if name == "tlpa" {
            format!("tlpa d={depth}")
        } else {
            name.to_string()
        };
        println!(
            "{:<10} {:>12.3} {:>16.2} {:>18.2} {:>12.0}",
            label,
            t,
            t * 1e6 / m.decisions as f64,
            t * 1e6 / m.contested_decisions.max(1) as f64,
            m.avg_turnaround
        );
    }
}
