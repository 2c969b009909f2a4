//! Benchmark: cost of the multi-resource penalty P(j) (eq. 8) and of the usage ledger, the
//! two fairshare operations the live manager runs per job.
//!
//! Platform: the 47 clusters of ../shared/data/swf/metacentrum/NGI_CZ.swf.machines when
//! present (CPU + RAM + GPU heterogeneity), else 47 generated clusters (seeded).
//! Run: `cargo bench -p hetpilot-core --bench fairshare_penalty`. Medians of 5 runs.

use std::path::PathBuf;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use hetpilot_core::fairshare::{
    JobRequest, JobStart, Machine, MachinePool, MultiResource, PenaltyFunction, UsageLedger,
};
use hetpilot_core::trace::parse_alea_machines;

const RUNS: usize = 5;
const JOBS: usize = 200_000;

fn platform(rng: &mut ChaCha8Rng) -> (MachinePool, &'static str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/swf/metacentrum/NGI_CZ.swf.machines");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let machines = parse_alea_machines(&text).expect("NGI_CZ machines parse");
        return (
            MachinePool::new(machines).expect("valid platform"),
            "NGI_CZ (47 clusters)",
        );
    }
    let machines = (0..47)
        .map(|i| {
            let mut m = Machine::new(
                &format!("c{i}"),
                rng.random_range(1..64),
                1 << rng.random_range(3..8),
                rng.random_range(16u64..2048) << 30,
            );
            m.gpus_per_node = if i % 5 == 0 { 4 } else { 0 };
            m
        })
        .collect();
    (
        MachinePool::new(machines).expect("valid platform"),
        "synthetic (47 clusters)",
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (platform, label) = platform(&mut rng);
    let jobs: Vec<JobRequest> = (0..JOBS)
        .map(|_| {
            let gpus = u32::from(rng.random_bool(0.05));
            JobRequest::uniform(
                rng.random_range(1..3),
                1 << rng.random_range(0..6),
                rng.random_range(1u64..256) << 30,
                gpus,
            )
        })
        .collect();
    let mut penalty_ns = Vec::new();
    let mut ledger_ns = Vec::new();
    let mut priced = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        let penalties: Vec<f64> = jobs
            .iter()
            .filter_map(|j| MultiResource.penalty(&platform, j).ok())
            .collect();
        penalty_ns.push(t.elapsed().as_secs_f64() * 1e9 / JOBS as f64);
        priced = penalties.len();
        let mut ledger = UsageLedger::new(Some(7.0 * 86_400.0));
        let t = Instant::now();
        for (i, p) in penalties.iter().enumerate() {
            let start = i as f64 * 10.0;
            ledger
                .start(JobStart {
                    job: i as u64,
                    user: format!("u{}", i % 300),
                    penalty: *p,
                    speed: 1.0,
                    requested_walltime: 3600.0,
                    start,
                })
                .expect("fresh job");
            if i >= 100 {
                ledger
                    .finish((i - 100) as u64, 1800.0)
                    .expect("running job");
            }
        }
        ledger_ns.push(t.elapsed().as_secs_f64() * 1e9 / penalties.len() as f64);
    }
    println!("platform: {label}; {JOBS} random requests, {priced} satisfiable");
    println!(
        "P(j) eq. 8 per job           {:>10.0} ns (median of {RUNS})",
        median(penalty_ns)
    );
    println!(
        "ledger start + finish per job {:>9.0} ns (median of {RUNS})",
        median(ledger_ns)
    );
}
