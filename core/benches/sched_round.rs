//! Benchmark: one two-level scheduling round at scale, and how each policy's cost grows
//! with the number of applications (compare with Section 5.3).
//!
//! `cargo bench -p hetpilot-core --bench sched_round` (one thread; medians of several
//! repetitions). Synthetic profile: 16 platforms × 500 nodes × 8 cores, AllCore plus
//! pairwise combinations (each application profiled next to 8 others per platform).

use std::time::Instant;

use hetpilot_core::sched::test_profiles::synthetic_profile;
use hetpilot_core::sched::{
    ApplicationState, PlatformState, Scheduler, SchedulerSettings, Snapshot,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const PLATFORMS: usize = 16;
const NODES: u32 = 500;
const CORES_PER_NODE: u32 = 8;

fn median_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let sizes = [125usize, 250, 500, 1000, 2000];
    let platforms: Vec<PlatformState> = (0..PLATFORMS)
        .map(|j| PlatformState {
            profile_index: j,
            nodes: NODES,
        })
        .collect();
    println!(
        "# one scheduling round: {PLATFORMS} platforms x {NODES} nodes x {CORES_PER_NODE} cores"
    );
    let headline = SchedulerSettings {
        first_level: "pa-rr".parse().unwrap(),
        second_level: "maf".parse().unwrap(),
        pairwise: true,
        ..Default::default()
    };
    let firsts = ["fairness", "paf", "aaf", "pa-rr", "water-fill"];
    let seconds = [
        ("all-core", false, true),
        ("random", false, true),
        ("maf", false, true),
        ("maf", true, true),
        ("maf", true, false),
        ("ca-rr", false, true),
    ];
    println!(
        "\n| applications | round: pa-rr + pairwise maf (ms) | {} | {} |",
        firsts
            .iter()
            .map(|f| format!("1st {f} (ms)"))
            .collect::<Vec<_>>()
            .join(" | "),
        seconds
            .iter()
            .map(|(s, pw, re)| format!(
                "2nd {s}{}{} (ms)",
                if *pw { " pairwise" } else { "" },
                if *re { "" } else { " once" }
            ))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!(
        "|---|---|{}{}",
        "---|".repeat(firsts.len()),
        "---|".repeat(seconds.len())
    );
    for &n in &sizes {
        let profile = synthetic_profile(n, PLATFORMS, CORES_PER_NODE, 8, 42);
        let apps: Vec<ApplicationState> = (0..n)
            .map(|i| ApplicationState {
                profile_index: i,
                remaining_tasks: 1_000_000,
                owner: i,
                completed_tasks: 0,
                age_s: 0.0,
            })
            .collect();
        let snapshot = Snapshot {
            profile: &profile,
            applications: &apps,
            platforms: &platforms,
            user_weights: &[],
            previous: None,
        };
        let reps = if n >= 1000 { 11 } else { 21 };
        let scheduler = Scheduler::new(headline.clone()).expect("valid settings");
        let round = median_ms(reps, || {
            let d = scheduler
                .schedule(&snapshot, &mut ChaCha8Rng::seed_from_u64(1))
                .expect("valid snapshot");
            std::hint::black_box(d);
        });
        let mut cells = vec![format!("{round:.2}")];
        for f in firsts {
            let s = Scheduler::new(SchedulerSettings {
                first_level: f.parse().unwrap(),
                ..headline.clone()
            })
            .expect("valid");
            cells.push(format!(
                "{:.2}",
                median_ms(reps, || {
                    std::hint::black_box(s.allocate(&snapshot, &mut ChaCha8Rng::seed_from_u64(1)));
                })
            ));
        }
        let allocation = scheduler.allocate(&snapshot, &mut ChaCha8Rng::seed_from_u64(1));
        for (second, pairwise, recompute) in seconds {
            let s = Scheduler::new(SchedulerSettings {
                second_level: second.parse().unwrap(),
                pairwise,
                recompute_co_runner_affinity: recompute,
                ..headline.clone()
            })
            .expect("valid");
            cells.push(format!(
                "{:.2}",
                median_ms(reps, || {
                    std::hint::black_box(s.map(
                        &snapshot,
                        &allocation,
                        &mut ChaCha8Rng::seed_from_u64(1),
                    ));
                })
            ));
        }
        println!("| {n} | {} |", cells.join(" | "));
    }
}
