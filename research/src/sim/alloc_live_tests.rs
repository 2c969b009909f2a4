//! The live control plane's replay of a trace (`hetpilot simulate live --swf`) agrees with
//! the alloc simulator on the same jobs and clusters, within the tolerance
//! docs/reproduction/tlpa.md states.

use hetpilot_core::alloc::workload::jobs_from_swf;
use hetpilot_core::alloc::{AllocatorKind, Cluster, FcfsOrder, Job};
use hetpilot_core::control::simulation::{replay_trace, TraceSettings};
use hetpilot_core::trace::{parse_swf, SwfOptions, SwfTrace};

use super::alloc::{simulate_alloc, AllocRun};

/// Live mean turnaround within this fraction of the simulator's.
const TOLERANCE: f64 = 0.15;

/// 16 jobs of 1-8 processors on clusters of 4, 8 and 8: a queue forms (jobs 5-8 wait
/// for the 8-processor ones) and drains.
const FIXTURE: &str = "\
; a fixture: job submit wait run alloc cpu mem req_procs req_time ...
1 0 -1 100 -1 -1 -1 8 100 -1 1 1 1 -1 1 -1 -1 -1
2 5 -1 300 -1 -1 -1 8 300 -1 1 1 1 -1 1 -1 -1 -1
3 10 -1 50 -1 -1 -1 4 50 -1 1 1 1 -1 1 -1 -1 -1
4 12 -1 200 -1 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1
5 20 -1 400 -1 -1 -1 8 400 -1 1 1 1 -1 1 -1 -1 -1
6 25 -1 60 -1 -1 -1 3 60 -1 1 1 1 -1 1 -1 -1 -1
7 30 -1 120 -1 -1 -1 6 120 -1 1 1 1 -1 1 -1 -1 -1
8 40 -1 30 -1 -1 -1 1 30 -1 1 1 1 -1 1 -1 -1 -1
9 300 -1 80 -1 -1 -1 4 80 -1 1 1 1 -1 1 -1 -1 -1
10 310 -1 90 -1 -1 -1 8 90 -1 1 1 1 -1 1 -1 -1 -1
11 320 -1 150 -1 -1 -1 2 150 -1 1 1 1 -1 1 -1 -1 -1
12 330 -1 20 -1 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1
13 900 -1 500 -1 -1 -1 8 500 -1 1 1 1 -1 1 -1 -1 -1
14 905 -1 100 -1 -1 -1 8 100 -1 1 1 1 -1 1 -1 -1 -1
15 910 -1 100 -1 -1 -1 5 100 -1 1 1 1 -1 1 -1 -1 -1
16 915 -1 40 -1 -1 -1 2 40 -1 1 1 1 -1 1 -1 -1 -1
";

fn clusters(speeds: [f64; 3]) -> Vec<Cluster> {
    [4, 8, 8]
        .into_iter()
        .zip(speeds)
        .map(|(procs, speed)| Cluster { procs, speed })
        .collect()
}

fn trace(text: &str) -> SwfTrace {
    parse_swf(text.as_bytes(), SwfOptions::default()).unwrap()
}

fn fixture_jobs() -> Vec<Job> {
    jobs_from_swf(&trace(FIXTURE)).0
}

fn settings(allocator: &str) -> TraceSettings {
    TraceSettings {
        allocator: allocator.parse().unwrap(),
        depth: 4,
        ..TraceSettings::default()
    }
}

fn alloc(clusters: &[Cluster], jobs: &[Job], allocator: &str) -> AllocRun {
    let mut a = allocator
        .parse::<AllocatorKind>()
        .unwrap()
        .build(4)
        .unwrap();
    simulate_alloc(clusters, jobs, &FcfsOrder, a.as_mut(), &mut |_| {}).unwrap()
}

#[test]
fn the_live_replay_agrees_with_the_simulator_within_the_tolerance() {
    let clusters = clusters([1.0; 3]);
    let jobs = fixture_jobs();
    assert_eq!(jobs.len(), 16);
    for allocator in ["tlpa", "bf"] {
        let live = replay_trace(&clusters, &jobs, &settings(allocator), &mut |_| {}).unwrap();
        let sim = alloc(&clusters, &jobs, allocator);
        let (l, s) = (live.metrics.avg_turnaround, sim.metrics.avg_turnaround);
        assert!(
            (l - s).abs() <= TOLERANCE * s,
            "{allocator}: live {l:.1} s, simulate alloc {s:.1} s"
        );
    }
}
