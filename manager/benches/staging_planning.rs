//! Planning time of Het-HPS vs HPS, MinMin, MaxMin and Sufferage on the same input:
//! IMAGE and SAT high-overlap batches of 2,000 and 20,000 tasks on the 4-cluster platform
//! with 16 nodes per cluster (64 nodes) and 6 storage nodes; median of 3 runs.
//!
//! `cargo bench -p hetpilot-manager --bench staging_planning`

use std::time::Instant;

use hetpilot::staging::platforms::four_cluster;
use hetpilot::staging::policy_by_name;
use hetpilot::staging::workload::{Overlap, WorkloadKind};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn main() {
    let platform = four_cluster(16, 6);
    let runs: usize = std::env::var("STAGING_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    println!("workload,tasks,algorithm,median_planning_seconds,runs");
    for tasks in [2000usize, 20000] {
        for kind in [WorkloadKind::Image, WorkloadKind::Sat] {
            let w = kind.generate(Overlap::High, tasks, 6, &mut ChaCha8Rng::seed_from_u64(1));
            for name in ["het-hps", "hps", "minmin", "maxmin", "sufferage"] {
                let policy = policy_by_name(name).expect("known policy");
                let mut times: Vec<f64> = (0..runs)
                    .map(|seed| {
                        let start = Instant::now();
                        let plan = policy
                            .plan(&w, &platform, seed as u64)
                            .expect("valid input");
                        let t = start.elapsed().as_secs_f64();
                        assert!(plan.is_complete(tasks));
                        t
                    })
                    .collect();
                times.sort_by(f64::total_cmp);
                println!("{kind:?},{tasks},{name},{:.3},{runs}", times[runs / 2]);
            }
        }
    }
}
