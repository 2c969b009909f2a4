//! Times one Het-HPS plan (the planner the live manager runs off-lock on its blocking
//! pool) on a generated high-overlap batch, 4 clusters × 16 nodes, 6 storage nodes.
//!
//! `cargo run --release -p hetpilot-core --example het_hps_plan -- sat 200000`

use std::time::Instant;

use hetpilot_core::staging::platforms::four_cluster;
use hetpilot_core::staging::workload::{Overlap, WorkloadKind};
use hetpilot_core::staging::StagingAlgorithm;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = match args.first().map(String::as_str) {
        Some("image") => WorkloadKind::Image,
        _ => WorkloadKind::Sat,
    };
    let tasks: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let w = kind.generate(Overlap::High, tasks, 6, &mut ChaCha8Rng::seed_from_u64(1));
    let platform = four_cluster(16, 6);
    let policy = StagingAlgorithm::HetHps.build();
    let start = Instant::now();
    let plan = policy.plan(&w, &platform, 1).expect("valid input");
    let seconds = start.elapsed().as_secs_f64();
    assert!(plan.is_complete(tasks));
    println!("{kind:?} {tasks} tasks: het-hps plan in {seconds:.2} s (wall)");
}
