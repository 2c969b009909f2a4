//! The live control plane's replay of a trace (`hetpilot simulate live --swf`) agrees with
//! the alloc simulator on the same jobs and clusters, within the tolerance
//! docs/reproduction/tlpa.md states.

use hetpilot_core::alloc::test_traces::{clusters, sixteen_jobs};
use hetpilot_core::alloc::{AllocatorKind, Cluster, FcfsOrder, Job};
use hetpilot_core::control::simulation::{replay_trace, TraceSettings};

use super::alloc::{simulate_alloc, AllocRun};

/// Live mean turnaround within this fraction of the simulator's.
const TOLERANCE: f64 = 0.15;

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
    let jobs = sixteen_jobs();
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
