//! Planning time of Het-HPS vs HPS, MinMin, MaxMin and Sufferage on the same input:
//! IMAGE and SAT high-overlap batches of 2,000 and 20,000 tasks on the 4-cluster platform
//! with 16 nodes per cluster (64 nodes) and 6 storage nodes; median of 3 runs, in wall
//! seconds and in the process's CPU seconds (user + system: what the plan cost, whatever
//! else the shared machine runs; run with `RAYON_NUM_THREADS=1` to compare one thread).
//!
//! `cargo bench -p hetpilot-core --bench staging_planning`

use std::time::Instant;

use hetpilot_core::staging::platforms::four_cluster;
use hetpilot_core::staging::workload::{Overlap, WorkloadKind};
use hetpilot_core::staging::StagingAlgorithm;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn main() {
    let platform = four_cluster(16, 6);
    let runs: usize = std::env::var("STAGING_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    println!("workload,tasks,algorithm,median_planning_seconds,median_cpu_seconds,runs");
    for tasks in [2000usize, 20000] {
        for kind in [WorkloadKind::Image, WorkloadKind::Sat] {
            let w = kind.generate(Overlap::High, tasks, 6, &mut ChaCha8Rng::seed_from_u64(1));
            for name in [
                StagingAlgorithm::HetHps,
                StagingAlgorithm::Hps,
                StagingAlgorithm::MinMin,
                StagingAlgorithm::MaxMin,
                StagingAlgorithm::Sufferage,
            ] {
                let policy = name.build();
                let (mut wall, mut cpu): (Vec<f64>, Vec<f64>) = (0..runs)
                    .map(|seed| {
                        let (start, cpu_start) = (Instant::now(), cpu_seconds());
                        let plan = policy
                            .plan(&w, &platform, seed as u64)
                            .expect("valid input");
                        let t = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu_start);
                        assert!(plan.is_complete(tasks));
                        t
                    })
                    .unzip();
                wall.sort_by(f64::total_cmp);
                cpu.sort_by(f64::total_cmp);
                println!(
                    "{kind:?},{tasks},{name},{:.3},{:.3},{runs}",
                    wall[runs / 2],
                    cpu[runs / 2]
                );
            }
        }
    }
}

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}
