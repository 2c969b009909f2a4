//! Benchmark: one simulation run of the paper's Default scenario (500,000 tasks, 2,400
//! cores, 5 applications) per policy combination, on one core.
//!
//! `cargo bench -p hetpilot-research --bench sched_simulate` (medians of several runs with
//! different seeds).

use std::time::Instant;

use hetpilot_core::sched::{RuntimeProfile, Scheduler, SchedulerSettings};
use hetpilot_research::sim::two_level::{simulate, Scenario};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const PROFILE: &str = include_str!("../../profiles/two-level/profile.toml");
const DEFAULT: &str = include_str!("../../profiles/two-level/scenarios/default.toml");

fn main() {
    let profile =
        RuntimeProfile::from_toml_str("profile.toml", PROFILE).expect("shipped profile is valid");
    let scenario =
        Scenario::from_toml_str("default.toml", DEFAULT).expect("shipped scenario is valid");
    let input = scenario
        .resolve(&profile)
        .expect("shipped scenario matches the profile");
    let reps: usize = 7;
    println!(
        "# one run of the Default scenario ({} tasks, {} cores), median of {reps} seeds",
        input.applications.iter().map(|a| a.tasks).sum::<u64>(),
        input.total_cores()
    );
    println!("\n| policy | median (ms) | min (ms) | max (ms) |\n|---|---|---|---|");
    for (first, second) in [
        ("pa-rr", "maf"),
        ("fairness", "all-core"),
        ("paf", "random"),
        ("aaf", "ca-rr"),
        ("water-fill", "maf"),
    ] {
        let settings = SchedulerSettings {
            first_level: first.parse().unwrap(),
            second_level: second.parse().unwrap(),
            ..Default::default()
        };
        let label = settings.label();
        let scheduler = Scheduler::new(settings).expect("valid settings");
        let mut times: Vec<f64> = (0..reps)
            .map(|seed| {
                let seed = seed as u64;
                let t = Instant::now();
                let out = simulate(&input, &scheduler, &mut ChaCha8Rng::seed_from_u64(seed))
                    .expect("valid input");
                std::hint::black_box(out);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "| {label} | {:.1} | {:.1} | {:.1} |",
            times[reps / 2],
            times[0],
            times[reps - 1]
        );
    }
}
