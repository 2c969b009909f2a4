//! Event-driven simulation of basic job scheduling (FCFS or SJF, no backfilling) with a
//! pluggable processor allocator on a heterogeneous multi-cluster (the TLPA paper's setting).
//!
//! Events: job arrivals and job ends. After each batch of events at one instant, the head
//! of the queue starts while some cluster has enough free processors for it; the allocator
//! picks among those clusters. Allocators see expected ends from the users' estimates; jobs
//! really end after runtime / speed (so a job may run past its estimate, as in the traces).

use hetpilot_core::event_queue::EventQueue;
use std::collections::BTreeSet;

use hetpilot_core::alloc::outcome::metrics_of;
pub use hetpilot_core::alloc::outcome::{AllocMetrics, AllocRun, JobOutcome, BOUNDED_SLOWDOWN_TAU};
use hetpilot_core::alloc::{
    validate_jobs, AllocError, Allocator, AllocatorInput, Cluster, ClusterLoad, Job, JobOrder,
};

/// Run the simulation. `progress` is called with the number of jobs started so far.
pub fn simulate_alloc(
    clusters: &[Cluster],
    jobs: &[Job],
    order: &dyn JobOrder,
    allocator: &mut dyn Allocator,
    progress: &mut dyn FnMut(usize),
) -> Result<AllocRun, AllocError> {
    validate_jobs(clusters, jobs)?;
    let mut arrivals: Vec<usize> = (0..jobs.len()).collect();
    arrivals.sort_by(|&a, &b| jobs[a].submit.total_cmp(&jobs[b].submit).then(a.cmp(&b)));
    // Arrival rank breaks key ties so equal keys keep submission order.
    let mut queue: BTreeSet<(u64, usize, usize)> = BTreeSet::new();
    // Running jobs (and their cluster) by end time, ties by job index.
    let mut ends: EventQueue<f64, (usize, usize)> = EventQueue::default();
    let mut loads: Vec<ClusterLoad> = clusters
        .iter()
        .map(|c| ClusterLoad::idle(c.procs))
        .collect();
    let mut outcomes = vec![
        JobOutcome {
            cluster: 0,
            start: 0.0,
            end: 0.0
        };
        jobs.len()
    ];
    let mut waiting: Vec<Job> = Vec::with_capacity(allocator.lookahead());
    let mut allocable: Vec<usize> = Vec::with_capacity(clusters.len());
    let mut metrics = AllocMetrics {
        jobs: jobs.len(),
        ..AllocMetrics::default()
    };
    let mut next_arrival = 0usize;
    let mut started = 0usize;
    while started < jobs.len() {
        let arrival_time = arrivals.get(next_arrival).map(|&j| jobs[j].submit);
        let end_time = ends.peek().map(|(end, _)| end);
        let now = match (arrival_time, end_time) {
            (Some(a), Some(e)) => a.min(e),
            (Some(a), None) => a,
            (None, Some(e)) => e,
            (None, None) => unreachable!("validated jobs always fit an idle cluster"),
        };
        while let Some((end, &(job, cluster))) = ends.peek() {
            if end > now {
                break;
            }
            ends.pop();
            loads[cluster].release_job(job);
        }
        while let Some(&j) = arrivals.get(next_arrival) {
            if jobs[j].submit > now {
                break;
            }
            queue.insert((order.key(&jobs[j]).max(0.0).to_bits(), next_arrival, j));
            next_arrival += 1;
        }
        metrics.max_queue = metrics.max_queue.max(queue.len());
        while let Some(&head) = queue.first() {
            let job = &jobs[head.2];
            allocable.clear();
            allocable.extend((0..clusters.len()).filter(|&c| loads[c].free >= job.procs));
            if allocable.is_empty() {
                break;
            }
            waiting.clear();
            if allocable.len() > 1 && allocator.lookahead() > 0 {
                waiting.extend(
                    queue
                        .iter()
                        .skip(1)
                        .take(allocator.lookahead())
                        .map(|&(_, _, j)| jobs[j]),
                );
            }
            let input = AllocatorInput {
                now,
                job,
                clusters,
                loads: &loads,
                allocable: &allocable,
                waiting: &waiting,
            };
            let c = allocator.choose(&input);
            assert!(
                allocable.contains(&c),
                "allocator {} chose a cluster that cannot fit the job",
                allocator.name()
            );
            metrics.decisions += 1;
            metrics.contested_decisions += usize::from(allocable.len() > 1);
            queue.pop_first();
            let end = now + job.runtime_on(&clusters[c]);
            loads[c].occupy(job.procs, now + job.estimate_on(&clusters[c]), head.2);
            ends.push(end, head.2 as u64, (head.2, c));
            outcomes[head.2] = JobOutcome {
                cluster: c,
                start: now,
                end,
            };
            started += 1;
            if started.is_multiple_of(1024) {
                progress(started);
            }
        }
    }
    progress(started);
    let metrics = AllocMetrics {
        decisions: metrics.decisions,
        contested_decisions: metrics.contested_decisions,
        max_queue: metrics.max_queue,
        ..metrics_of(clusters, jobs, &outcomes)
    };
    Ok(AllocRun { outcomes, metrics })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_core::alloc::{BestFit, FastestFirst, FcfsOrder, SjfOrder, Tlpa};
    use proptest::prelude::*;

    fn job(id: i64, submit: f64, procs: u32, runtime: f64) -> Job {
        Job {
            id,
            submit,
            procs,
            runtime,
            estimate: runtime,
        }
    }

    fn run(
        clusters: &[Cluster],
        jobs: &[Job],
        order: &dyn JobOrder,
        alloc: &mut dyn Allocator,
    ) -> AllocRun {
        simulate_alloc(clusters, jobs, order, alloc, &mut |_| {}).unwrap()
    }

    #[test]
    fn fcfs_without_backfilling_blocks_behind_the_head() {
        let clusters = [Cluster {
            procs: 4,
            speed: 1.0,
        }];
        let jobs = [
            job(1, 0.0, 3, 10.0),
            job(2, 1.0, 4, 10.0),
            job(3, 2.0, 1, 1.0),
        ];
        let r = run(&clusters, &jobs, &FcfsOrder, &mut BestFit);
        assert_eq!(r.outcomes[1].start, 10.0);
        assert_eq!(
            r.outcomes[2].start, 20.0,
            "job 3 fits at t=2 but must not pass the head"
        );
        assert_eq!(r.outcomes[2].end, 21.0);
        assert_eq!(r.metrics.decisions, 3);
        // SJF lets the 1 s job go first once the 3-proc job ends.
        let r = run(&clusters, &jobs, &SjfOrder, &mut BestFit);
        assert_eq!(r.outcomes[2].start, 2.0);
    }

    #[test]
    fn speeds_scale_runtimes_and_policies_differ() {
        let clusters = [
            Cluster {
                procs: 8,
                speed: 1.0,
            },
            Cluster {
                procs: 16,
                speed: 2.0,
            },
        ];
        let jobs = [job(1, 0.0, 8, 100.0)];
        let bf = run(&clusters, &jobs, &FcfsOrder, &mut BestFit);
        assert_eq!((bf.outcomes[0].cluster, bf.outcomes[0].end), (0, 100.0));
        let ff = run(&clusters, &jobs, &FcfsOrder, &mut FastestFirst);
        assert_eq!((ff.outcomes[0].cluster, ff.outcomes[0].end), (1, 50.0));
        assert_eq!(ff.metrics.avg_turnaround, 50.0);
        assert!((ff.metrics.utilization - 8.0 * 50.0 / (24.0 * 50.0)).abs() < 1e-12);
    }

    #[test]
    fn tlpa_looks_ahead_where_greedy_does_not() {
        // A 4-proc job could go to the fast 8-proc cluster; an 8-proc job waits behind it and
        // only fits there. TLPA with depth 1 keeps the fast cluster for the big job.
        let clusters = [
            Cluster {
                procs: 4,
                speed: 1.0,
            },
            Cluster {
                procs: 8,
                speed: 1.25,
            },
        ];
        let jobs = [job(0, 0.0, 4, 10.0), job(1, 0.0, 8, 1000.0)];
        let greedy = run(&clusters, &jobs, &FcfsOrder, &mut Tlpa::new(0));
        assert_eq!(greedy.outcomes[0].cluster, 1);
        let tlpa = run(&clusters, &jobs, &FcfsOrder, &mut Tlpa::new(1));
        assert_eq!(tlpa.outcomes[0].cluster, 0);
        assert!(tlpa.metrics.avg_turnaround < greedy.metrics.avg_turnaround);
    }

    #[test]
    fn bad_input_is_an_error() {
        let err = simulate_alloc(
            &[],
            &[job(1, 0.0, 1, 1.0)],
            &FcfsOrder,
            &mut BestFit,
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(err, AllocError::NoClusters);
        let err = simulate_alloc(
            &[Cluster {
                procs: 2,
                speed: 1.0,
            }],
            &[job(9, 0.0, 3, 1.0)],
            &FcfsOrder,
            &mut BestFit,
            &mut |_| {},
        )
        .unwrap_err();
        assert!(matches!(err, AllocError::JobTooLarge { id: 9, .. }));
        // A look-ahead whose buffers could not be allocated is refused by name.
        let tlpa = hetpilot_core::alloc::AllocatorKind::Tlpa;
        let err = tlpa.build(usize::MAX).err();
        assert_eq!(err, Some(AllocError::DepthTooLarge(usize::MAX)));
        assert!(tlpa.build(hetpilot_core::alloc::MAX_TLPA_DEPTH).is_ok());
    }

    fn arb_case() -> impl Strategy<Value = (Vec<Cluster>, Vec<Job>)> {
        let clusters = prop::collection::vec((1u32..32, 1u32..5), 1..5).prop_map(|v| {
            v.into_iter()
                .map(|(p, s)| Cluster {
                    procs: p,
                    speed: f64::from(s) * 0.5,
                })
                .collect::<Vec<_>>()
        });
        clusters.prop_flat_map(|clusters| {
            let largest = clusters.iter().map(|c| c.procs).max().unwrap();
            let jobs = prop::collection::vec((0u32..500, 1..=largest, 1u32..200, 1u32..400), 1..60)
                .prop_map(|v| {
                    v.into_iter()
                        .enumerate()
                        .map(|(i, (s, p, r, e))| Job {
                            id: i as i64,
                            submit: f64::from(s),
                            procs: p,
                            runtime: f64::from(r),
                            estimate: f64::from(e),
                        })
                        .collect::<Vec<_>>()
                });
            (Just(clusters), jobs)
        })
    }

    proptest! {
        /// TLPA with depth 0 equals its greedy choice: each job on the allocable cluster with
        /// its own best expected turnaround, i.e. the fastest (ties to the lower index) —
        /// the whole schedule equals Fastest-First's.
        #[test]
        fn tlpa_depth_zero_is_greedy((clusters, jobs) in arb_case(), sjf in any::<bool>()) {
            let order: &dyn JobOrder = if sjf { &SjfOrder } else { &FcfsOrder };
            let greedy = run(&clusters, &jobs, order, &mut FastestFirst);
            let tlpa = run(&clusters, &jobs, order, &mut Tlpa::new(0));
            prop_assert_eq!(greedy.outcomes, tlpa.outcomes);
        }

        /// Every policy runs every job exactly once, never before it is submitted, and never
        /// over-commits a cluster.
        #[test]
        fn schedules_are_feasible((clusters, jobs) in arb_case(), depth in 0usize..8) {
            for alloc in [Box::new(BestFit) as Box<dyn Allocator>, Box::new(FastestFirst), Box::new(Tlpa::new(depth))] {
                let mut alloc = alloc;
                let r = run(&clusters, &jobs, &FcfsOrder, alloc.as_mut());
                let mut events: Vec<(f64, i64, usize)> = Vec::new();
                for (j, o) in jobs.iter().zip(&r.outcomes) {
                    prop_assert!(o.start >= j.submit);
                    prop_assert!((o.end - o.start - j.runtime / clusters[o.cluster].speed).abs() < 1e-9);
                    events.push((o.start, i64::from(j.procs), o.cluster));
                    events.push((o.end, -i64::from(j.procs), o.cluster));
                }
                events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let mut used = vec![0i64; clusters.len()];
                for (_, delta, c) in events {
                    used[c] += delta;
                    prop_assert!(used[c] <= i64::from(clusters[c].procs));
                }
            }
        }
    }
}
