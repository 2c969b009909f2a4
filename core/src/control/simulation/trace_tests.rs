//! Tests of the trace replay through the live control plane: it never over-commits a
//! cluster, is reproducible for a seed, and refuses hostile records naming their line and
//! field (`hetpilot-research` checks that it agrees with `simulate alloc`).

use super::trace::{check_records, replay_trace, scenario_of, TraceError, TraceSettings};
use super::world::simulate;
use crate::alloc::outcome::AllocRun;
use crate::alloc::test_traces::{clusters, sixteen_jobs, SIXTEEN_JOBS as FIXTURE};
use crate::alloc::workload::jobs_from_swf;
use crate::alloc::{Cluster, Job};
use crate::trace::{parse_swf, SwfOptions, SwfTrace};

fn trace(text: &str) -> SwfTrace {
    parse_swf(text.as_bytes(), SwfOptions::default()).unwrap()
}

fn settings(allocator: &str) -> TraceSettings {
    TraceSettings {
        allocator: allocator.parse().unwrap(),
        depth: 4,
        ..TraceSettings::default()
    }
}

/// No cluster ever runs more processors than it has, and every run lasts its runtime
/// on the cluster it ran on.
fn assert_feasible(clusters: &[Cluster], jobs: &[Job], run: &AllocRun) {
    let mut events: Vec<(f64, i64, usize)> = Vec::new();
    for (j, o) in jobs.iter().zip(&run.outcomes) {
        assert!(
            o.start + 1e-3 >= j.submit,
            "job {} starts early: {o:?}",
            j.id
        );
        let length = j.runtime / clusters[o.cluster].speed;
        assert!(
            (o.end - o.start - length).abs() < 2e-3,
            "job {}: {o:?}",
            j.id
        );
        events.push((o.start, i64::from(j.procs), o.cluster));
        events.push((o.end, -i64::from(j.procs), o.cluster));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut used = vec![0i64; clusters.len()];
    for (at, delta, c) in events {
        used[c] += delta;
        assert!(
            used[c] <= i64::from(clusters[c].procs),
            "cluster {c} over-committed at {at}: {used:?}"
        );
    }
}

#[test]
fn a_trace_on_heterogeneous_clusters_runs_each_job_at_its_clusters_speed() {
    let clusters = clusters([0.8, 1.0, 1.2]);
    let jobs = sixteen_jobs();
    let live = replay_trace(&clusters, &jobs, &settings("ff"), &mut |_| {}).unwrap();
    assert_feasible(&clusters, &jobs, &live);
    // Agents of 2 slots: a run spans several agents of its cluster, never two clusters.
    let split = TraceSettings {
        agent_slots: Some(2),
        ..settings("tlpa")
    };
    let live = replay_trace(&clusters, &jobs, &split, &mut |_| {}).unwrap();
    assert_feasible(&clusters, &jobs, &live);
}

#[test]
fn live_placement_on_a_trace_is_the_same_for_the_same_seed() {
    let clusters = clusters([0.8, 1.0, 1.2]);
    let jobs = sixteen_jobs();
    let settings = TraceSettings {
        agent_slots: Some(2),
        seed: 7,
        ..settings("tlpa")
    };
    let scenario = scenario_of(&clusters, &jobs, &settings).unwrap();
    let first = simulate(&scenario).unwrap();
    for _ in 0..3 {
        assert_eq!(simulate(&scenario).unwrap(), first);
    }
    let a = replay_trace(&clusters, &jobs, &settings, &mut |_| {}).unwrap();
    let b = replay_trace(&clusters, &jobs, &settings, &mut |_| {}).unwrap();
    assert_eq!(a.outcomes, b.outcomes);
}

/// The fixture with its line `line` (from 1, counting the header) replaced.
fn with_line(line: usize, record: &str) -> SwfTrace {
    let mut lines: Vec<&str> = FIXTURE.lines().collect();
    lines[line - 1] = record;
    trace(&lines.join("\n"))
}

fn refusal(trace: &SwfTrace) -> String {
    match check_records(trace, &clusters([1.0; 3]), usize::MAX) {
        Err(e @ TraceError::Record { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn hostile_records_are_refused_naming_their_line_and_field() {
    assert!(check_records(&trace(FIXTURE), &clusters([1.0; 3]), usize::MAX).is_ok());
    let wide = refusal(&with_line(
        4,
        "3 10 -1 50 -1 -1 -1 9 50 -1 1 1 1 -1 1 -1 -1 -1",
    ));
    assert!(
        wide.starts_with("line 4 (job 3): field 8 (requested processors) = 9"),
        "{wide}"
    );
    let huge = refusal(&with_line(
        5,
        "4 12 -1 200 4294967295 -1 -1 -1 200 -1 1 1 1 -1 1 -1 -1 -1",
    ));
    assert!(
        huge.starts_with("line 5 (job 4): field 5 (allocated processors) = 4294967295"),
        "{huge}"
    );
    let long = refusal(&with_line(
        6,
        "5 20 -1 1e300 -1 -1 -1 8 400 -1 1 1 1 -1 1 -1 -1 -1",
    ));
    assert!(
        long.starts_with("line 6 (job 5): field 4 (run time)"),
        "{long}"
    );
    let request = refusal(&with_line(
        7,
        "6 25 -1 60 -1 -1 -1 3 9e12 -1 1 1 1 -1 1 -1 -1 -1",
    ));
    assert!(
        request.starts_with("line 7 (job 6): field 9 (requested time)"),
        "{request}"
    );
    let late = refusal(&with_line(
        8,
        "7 1e18 -1 120 -1 -1 -1 6 120 -1 1 1 1 -1 1 -1 -1 -1",
    ));
    assert!(
        late.starts_with("line 8 (job 7): field 2 (submit time)"),
        "{late}"
    );
    // Past the first N jobs a record is not replayed, so not refused.
    let beyond = with_line(17, "16 915 -1 40 -1 -1 -1 99 40 -1 1 1 1 -1 1 -1 -1 -1");
    assert!(check_records(&beyond, &clusters([1.0; 3]), 15).is_ok());
    assert!(check_records(&beyond, &clusters([1.0; 3]), 16).is_err());
}

#[test]
fn nan_and_infinite_fields_never_reach_the_replay() {
    // NaN and infinite times read as unknown: no run time, the job is left out; no submit
    // time, the line is malformed (named in strict mode).
    let jobs = jobs_from_swf(&with_line(
        2,
        "1 0 -1 NaN -1 -1 -1 8 inf -1 1 1 1 -1 1 -1 -1 -1",
    ))
    .0;
    assert_eq!(jobs.len(), 15);
    let mut lines: Vec<&str> = FIXTURE.lines().collect();
    lines[2] = "2 NaN -1 300 -1 -1 -1 8 300 -1 1 1 1 -1 1 -1 -1 -1";
    let err = parse_swf(lines.join("\n").as_bytes(), SwfOptions { strict: true }).unwrap_err();
    assert!(
        err.to_string().starts_with("line 3: field 2 (submit time)"),
        "{err}"
    );
    // A job built by hand with a NaN time is refused by the simulator's own checks.
    let mut jobs = sixteen_jobs();
    jobs[3].runtime = f64::NAN;
    let err = scenario_of(&clusters([1.0; 3]), &jobs, &settings("tlpa")).unwrap_err();
    assert!(err.to_string().contains("job 4"), "{err}");
}

#[test]
fn clusters_that_make_no_agents_and_too_many_jobs_are_refused() {
    let jobs = sixteen_jobs();
    let odd = TraceSettings {
        agent_slots: Some(3),
        ..settings("tlpa")
    };
    let err = scenario_of(&clusters([1.0; 3]), &jobs, &odd).unwrap_err();
    assert!(
        err.to_string().starts_with("cluster1: its 4 processors"),
        "{err}"
    );
    let none = TraceSettings {
        agent_slots: Some(0),
        ..settings("tlpa")
    };
    assert!(matches!(
        scenario_of(&clusters([1.0; 3]), &jobs, &none),
        Err(TraceError::Clusters(_))
    ));
    let many = vec![jobs[0]; super::trace::MAX_TRACE_JOBS + 1];
    assert!(matches!(
        scenario_of(&clusters([1.0; 3]), &many, &settings("tlpa")),
        Err(TraceError::TooManyJobs(_))
    ));
    let late = Job {
        submit: 1e12,
        ..jobs[0]
    };
    let err = scenario_of(&clusters([1.0; 3]), &[late], &settings("tlpa")).unwrap_err();
    assert!(err.to_string().starts_with("job 1: submitted at"), "{err}");
}

#[test]
fn skipping_the_rounds_in_which_nothing_happened_changes_no_outcome() {
    let clusters = clusters([0.8, 1.0, 1.2]);
    let jobs = sixteen_jobs();
    for allocator in ["tlpa", "bf"] {
        let mut scenario = scenario_of(&clusters, &jobs, &settings(allocator)).unwrap();
        let skipping = simulate(&scenario).unwrap();
        scenario.skip_quiet_rounds = false;
        let every = simulate(&scenario).unwrap();
        assert_eq!(skipping.started_ms, every.started_ms, "{allocator}");
        assert_eq!(skipping.finished_ms, every.finished_ms, "{allocator}");
        assert_eq!(skipping.runs, every.runs, "{allocator}");
        assert!(
            skipping.rounds < every.rounds / 10,
            "{} of {}",
            skipping.rounds,
            every.rounds
        );
    }
}
