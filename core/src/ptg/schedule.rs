//! Schedules of several PTGs on one cluster, the two processor models that build them,
//! the backfilling post-pass every algorithm ends with (§4.1), and a checker.
//!
//! Processors are identical and a task may use any `p` of them (they need not be
//! contiguous), so a schedule is feasible as soon as, at every instant, the tasks running
//! use at most `P` processors: we keep counts, not processor identities.
//!
//! - [`ProcessorPool`]: each processor's next free time, as HCPA's mapping sees them
//!   ("append" placement: a task goes after everything already on its processors).
//! - [`AvailabilityProfile`]: the number of free processors over time, where a task may
//!   also go into a hole left earlier (backfilling, box placement).

use serde::{Deserialize, Serialize};

use super::graph::Ptg;

/// Relative tolerance on times (schedules are built from sums of floating-point times).
pub const TIME_TOLERANCE: f64 = 1e-9;

fn tolerance(t: f64) -> f64 {
    TIME_TOLERANCE * t.abs().max(1.0)
}

/// Where and when one task runs: its interval and how many processors it holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Start time, seconds from the moment all PTGs are submitted.
    pub start: f64,
    /// End time (`start + T(v, processors)`).
    pub finish: f64,
    /// The task's allocation `p_v`.
    pub processors: u32,
}

/// A task of one PTG of an instance: `(ptg, task)` indices.
pub type TaskId = (usize, usize);

/// A schedule of several PTGs: one placement per task of each PTG, and the order in which
/// the algorithm placed them (the backfilling pass reads it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// `placements[i][v]`: task `v` of PTG `i`.
    pub placements: Vec<Vec<Placement>>,
    /// Every task once, in the order the algorithm placed it.
    pub order: Vec<TaskId>,
}

/// A schedule that breaks a constraint.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// The schedule does not have one placement per task.
    #[error("PTG {0}: wrong number of placements")]
    Shape(usize),
    /// A task's interval does not match `T(v, p)`.
    #[error("task {0:?} lasts {1} s, T(v, p) is {2} s")]
    Duration(TaskId, f64, f64),
    /// A task holds no processor or more than the cluster has.
    #[error("task {0:?} holds {1} processors")]
    Processors(TaskId, u32),
    /// A task starts before one of its predecessors ends, or before time 0.
    #[error("task {0:?} starts at {1} before its predecessor {2} ends at {3}")]
    Precedence(TaskId, f64, usize, f64),
    /// More processors are busy at some instant than the cluster has.
    #[error("{1} processors busy at t = {0} on a cluster of {2}")]
    Capacity(f64, u32, u32),
}

impl Schedule {
    /// An empty schedule for PTGs of the given sizes (every task at 0 on 1 processor).
    pub fn empty(sizes: &[usize]) -> Schedule {
        Schedule {
            placements: sizes
                .iter()
                .map(|&n| {
                    vec![
                        Placement {
                            start: 0.0,
                            finish: 0.0,
                            processors: 1,
                        };
                        n
                    ]
                })
                .collect(),
            order: Vec::new(),
        }
    }

    /// Records that task `id` runs as `placement` (appended to the placement order).
    pub fn place(&mut self, id: TaskId, placement: Placement) {
        self.placements[id.0][id.1] = placement;
        self.order.push(id);
    }

    /// `C_max_i`: when PTG `i` completes (its last task ends; all PTGs start at time 0).
    pub fn completion(&self, ptg: usize) -> f64 {
        self.placements[ptg]
            .iter()
            .map(|p| p.finish)
            .fold(0.0, f64::max)
    }

    /// The overall makespan `max_i C_max_i` (§3.2).
    pub fn makespan(&self) -> f64 {
        (0..self.placements.len())
            .map(|i| self.completion(i))
            .fold(0.0, f64::max)
    }

    /// Processor-seconds used by all tasks.
    pub fn busy_area(&self) -> f64 {
        self.placements
            .iter()
            .flatten()
            .map(|p| p.processors as f64 * (p.finish - p.start))
            .sum()
    }

    /// Checks the schedule against the PTGs and a cluster of `processors`: one placement
    /// per task, durations equal to `T(v, p)`, precedence, and at most `processors` busy
    /// at any instant.
    pub fn verify(&self, ptgs: &[&Ptg], processors: u32) -> Result<(), ScheduleError> {
        let mut events: Vec<(f64, i64)> = Vec::new();
        for (i, g) in ptgs.iter().enumerate() {
            let placed = self.placements.get(i).ok_or(ScheduleError::Shape(i))?;
            if placed.len() != g.len() {
                return Err(ScheduleError::Shape(i));
            }
            for (v, p) in placed.iter().enumerate() {
                if p.processors == 0 || p.processors > processors {
                    return Err(ScheduleError::Processors((i, v), p.processors));
                }
                let expected = g.task(v).time(p.processors);
                if ((p.finish - p.start) - expected).abs() > tolerance(p.finish) {
                    return Err(ScheduleError::Duration(
                        (i, v),
                        p.finish - p.start,
                        expected,
                    ));
                }
                if p.start < -tolerance(0.0) {
                    return Err(ScheduleError::Precedence((i, v), p.start, v, 0.0));
                }
                for &u in g.predecessors(v) {
                    if p.start + tolerance(p.start) < placed[u].finish {
                        return Err(ScheduleError::Precedence(
                            (i, v),
                            p.start,
                            u,
                            placed[u].finish,
                        ));
                    }
                }
                if !g.task(v).is_empty() {
                    events.push((p.start, p.processors as i64));
                    events.push((p.finish, -(p.processors as i64)));
                }
            }
        }
        // Ends before starts at equal times; starts and ends closer than the tolerance are
        // treated as simultaneous.
        events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut busy = 0i64;
        let mut k = 0;
        while k < events.len() {
            let t = events[k].0;
            let mut j = k;
            while j < events.len() && events[j].0 <= t + tolerance(t) {
                busy += events[j].1;
                j += 1;
            }
            if busy > processors as i64 {
                return Err(ScheduleError::Capacity(t, busy as u32, processors));
            }
            k = j;
        }
        Ok(())
    }
}

/// Each processor's next free time, sorted: HCPA's view of the cluster during mapping
/// (a task placed on a processor goes after everything already placed there).
#[derive(Debug, Clone)]
pub struct ProcessorPool {
    free_at: Vec<f64>,
}

impl ProcessorPool {
    /// `processors` processors, all free at time 0.
    pub fn new(processors: u32) -> ProcessorPool {
        ProcessorPool {
            free_at: vec![0.0; processors as usize],
        }
    }

    /// The number of processors.
    pub fn processors(&self) -> u32 {
        self.free_at.len() as u32
    }

    /// Places a task of `duration` on `count` processors no earlier than `ready`, as early
    /// as the processors allow, and returns its start. The processors are chosen as
    /// biCPA's mapping does (frs69wq/biCPA `get_best_workstation_set`): among those free by
    /// the start, the ones free latest (least idle time left behind), then those free
    /// earliest. A task of zero duration holds no processor and starts at `ready`.
    pub fn place(&mut self, ready: f64, count: u32, duration: f64) -> f64 {
        let q = count as usize;
        if duration <= 0.0 || q == 0 {
            return ready;
        }
        assert!(
            q <= self.free_at.len(),
            "{q} processors on a pool of {}",
            self.free_at.len()
        );
        // free_at is sorted: the first `free_by_ready` processors are free at `ready`.
        let free_by_ready = self.free_at.partition_point(|&t| t <= ready);
        let (range, start) = if free_by_ready >= q {
            (free_by_ready - q..free_by_ready, ready)
        } else {
            (0..q, self.free_at[q - 1].max(ready))
        };
        let finish = start + duration;
        self.free_at.drain(range);
        let at = self.free_at.partition_point(|&t| t <= finish);
        self.free_at.splice(at..at, std::iter::repeat_n(finish, q));
        start
    }
}

/// The number of free processors over time, a step function: `steps[k] = (t_k, free_k)`
/// means `free_k` processors are free from `t_k` until `t_{k+1}` (the last step lasts
/// forever). Tasks may be placed into any hole large enough.
#[derive(Debug, Clone)]
pub struct AvailabilityProfile {
    processors: u32,
    steps: Vec<(f64, u32)>,
}

impl AvailabilityProfile {
    /// `processors` processors, all free from time 0 on.
    pub fn new(processors: u32) -> AvailabilityProfile {
        AvailabilityProfile {
            processors,
            steps: vec![(0.0, processors)],
        }
    }

    /// The number of processors.
    pub fn processors(&self) -> u32 {
        self.processors
    }

    /// The earliest `t >= ready` such that `count` processors are free during
    /// `[t, t + duration)`. A task of zero duration fits at `ready`.
    pub fn earliest_start(&self, ready: f64, count: u32, duration: f64) -> f64 {
        if duration <= 0.0 || count == 0 {
            return ready;
        }
        assert!(
            count <= self.processors,
            "{count} processors on {}",
            self.processors
        );
        // The step containing `ready`.
        let mut k = self
            .steps
            .partition_point(|s| s.0 <= ready)
            .saturating_sub(1);
        let mut start = ready.max(self.steps[k].0);
        'candidate: loop {
            let end = start + duration;
            let mut j = k;
            while j < self.steps.len() && self.steps[j].0 < end - tolerance(end) {
                if self.steps[j].1 < count {
                    // Not enough here: the next candidate starts after this step.
                    k = j + 1;
                    start = self.steps[k].0;
                    continue 'candidate;
                }
                j += 1;
            }
            return start;
        }
    }

    /// Marks `count` processors busy during `[start, start + duration)`.
    pub fn reserve(&mut self, start: f64, count: u32, duration: f64) {
        if duration <= 0.0 || count == 0 {
            return;
        }
        let end = start + duration;
        let first = self.split_at(start);
        let last = self.split_at(end);
        for step in &mut self.steps[first..last] {
            assert!(
                step.1 >= count,
                "reserving {count} processors at t = {} where {} are free",
                step.0,
                step.1
            );
            step.1 -= count;
        }
    }

    /// The index of the step that starts at `t`, splitting the one containing it if needed
    /// (times within the tolerance of an existing step boundary snap to it).
    fn split_at(&mut self, t: f64) -> usize {
        let k = self.steps.partition_point(|s| s.0 <= t + tolerance(t));
        // steps[k - 1] starts at or before t (k >= 1 since the first step starts at 0 <= t).
        let k = k.max(1);
        if (self.steps[k - 1].0 - t).abs() <= tolerance(t) {
            return k - 1;
        }
        let free = self.steps[k - 1].1;
        self.steps.insert(k, (t, free));
        k
    }
}

/// The backfilling post-pass of §4.1, used as the last step of every algorithm: "tasks are
/// considered in the order in which they were scheduled and each task is started as early
/// as possible as long as no other task is delayed", after conservative backfilling
/// (Mu'alem and Feitelson). We take the tasks by increasing start time (ties in the
/// algorithm's placement order) and rebuild the schedule: each task starts at the
/// earliest time after its predecessors' new ends where its processors are free for its
/// whole duration, given the tasks already rebuilt. Since those started no later than
/// before, a task's old slot is still free when its turn comes, so no task starts later
/// than in the input and the result is never worse.
pub fn backfill(schedule: &Schedule, ptgs: &[&Ptg], processors: u32) -> Schedule {
    let mut rank = vec![Vec::new(); ptgs.len()];
    for (i, g) in ptgs.iter().enumerate() {
        rank[i] = vec![usize::MAX; g.len()];
    }
    for (r, &(i, v)) in schedule.order.iter().enumerate() {
        rank[i][v] = r;
    }
    let mut tasks: Vec<TaskId> = (0..ptgs.len())
        .flat_map(|i| (0..ptgs[i].len()).map(move |v| (i, v)))
        .collect();
    tasks.sort_by(|&(i, v), &(j, u)| {
        schedule.placements[i][v]
            .start
            .total_cmp(&schedule.placements[j][u].start)
            .then(rank[i][v].cmp(&rank[j][u]))
    });
    let mut profile = AvailabilityProfile::new(processors);
    let mut out = Schedule::empty(&ptgs.iter().map(|g| g.len()).collect::<Vec<_>>());
    for (i, v) in tasks {
        let old = schedule.placements[i][v];
        let duration = old.finish - old.start;
        let ready = ptgs[i]
            .predecessors(v)
            .iter()
            .map(|&u| out.placements[i][u].finish)
            .fold(0.0, f64::max);
        let start = profile.earliest_start(ready, old.processors, duration);
        debug_assert!(
            start <= old.start + tolerance(old.start),
            "backfilling delayed task ({i}, {v}) from {} to {start}",
            old.start
        );
        profile.reserve(start, old.processors, duration);
        out.place(
            (i, v),
            Placement {
                start,
                finish: start + duration,
                processors: old.processors,
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptg::graph::tests::{diamond, task};

    #[test]
    fn the_pool_picks_the_latest_free_processors_before_the_start() {
        let mut pool = ProcessorPool::new(4);
        assert_eq!(pool.place(0.0, 2, 10.0), 0.0); // two busy until 10
        assert_eq!(pool.place(0.0, 1, 4.0), 0.0); // one busy until 4
                                                  // Ready at 5: one processor (free at 0) and the one free at 4 are free; the task
                                                  // takes the one free at 4 (latest before 5) and keeps the one free since 0.
        assert_eq!(pool.place(5.0, 1, 1.0), 5.0);
        assert_eq!(pool.free_at, vec![0.0, 6.0, 10.0, 10.0]);
        // Three processors: the earliest three are free at 10.
        assert_eq!(pool.place(0.0, 3, 2.0), 10.0);
        assert_eq!(pool.free_at, vec![10.0, 12.0, 12.0, 12.0]);
        // Zero duration: no processor.
        assert_eq!(pool.place(3.0, 4, 0.0), 3.0);
    }

    #[test]
    fn the_profile_finds_holes() {
        let mut p = AvailabilityProfile::new(4);
        p.reserve(0.0, 3, 10.0); // 1 free in [0, 10)
        p.reserve(12.0, 4, 5.0); // 0 free in [12, 17)
        assert_eq!(p.earliest_start(0.0, 1, 10.0), 0.0);
        assert_eq!(p.earliest_start(0.0, 2, 2.0), 10.0); // fits [10, 12)
        assert_eq!(p.earliest_start(0.0, 2, 3.0), 17.0); // [10, 12) is too short
        assert_eq!(p.earliest_start(11.0, 4, 1.0), 11.0); // [11, 12) is free
        assert_eq!(p.earliest_start(11.5, 4, 1.0), 17.0);
        assert_eq!(p.earliest_start(20.0, 4, 1.0), 20.0);
        p.reserve(10.0, 2, 2.0);
        assert_eq!(p.earliest_start(0.0, 3, 1.0), 17.0);
        assert_eq!(p.earliest_start(0.0, 2, 1.0), 10.0); // 2 still free in [10, 12)
        assert_eq!(p.earliest_start(0.0, 2, 2.5), 17.0);
        assert_eq!(p.earliest_start(0.0, 1, 10.0), 0.0);
    }

    #[test]
    #[should_panic(expected = "reserving")]
    fn overbooking_is_a_bug() {
        let mut p = AvailabilityProfile::new(2);
        p.reserve(0.0, 2, 5.0);
        p.reserve(4.0, 1, 5.0);
    }

    #[test]
    fn verify_catches_each_kind_of_error() {
        let g = diamond();
        let good = Schedule {
            placements: vec![vec![
                Placement {
                    start: 0.0,
                    finish: 5.0,
                    processors: 2,
                },
                Placement {
                    start: 5.0,
                    finish: 25.0,
                    processors: 2,
                },
                Placement {
                    start: 5.0,
                    finish: 15.0,
                    processors: 2,
                },
                Placement {
                    start: 25.0,
                    finish: 30.0,
                    processors: 2,
                },
            ]],
            order: vec![(0, 0), (0, 1), (0, 2), (0, 3)],
        };
        assert_eq!(good.verify(&[&g], 4), Ok(()));
        assert_eq!(good.makespan(), 30.0);
        assert_eq!(good.busy_area(), 80.0);
        assert!(matches!(
            good.verify(&[&g], 3),
            Err(ScheduleError::Capacity(..))
        ));
        let mut early = good.clone();
        early.placements[0][3] = Placement {
            start: 20.0,
            finish: 25.0,
            processors: 2,
        };
        assert!(matches!(
            early.verify(&[&g], 4),
            Err(ScheduleError::Precedence(..))
        ));
        let mut long = good.clone();
        long.placements[0][2].finish = 16.0;
        assert!(matches!(
            long.verify(&[&g], 4),
            Err(ScheduleError::Duration(..))
        ));
    }

    #[test]
    fn backfilling_moves_a_task_into_a_hole_without_delaying_others() {
        // Two independent PTGs on 2 processors. PTG 0: a (1 proc, 10 s) then b (2 procs,
        // 10 s). PTG 1: c (1 proc, 5 s), placed after b although it fits beside a.
        let p0 = Ptg::new("ab", vec![task(10.0, 0.0), task(20.0, 0.0)], &[(0, 1)]).unwrap();
        let p1 = Ptg::new("c", vec![task(5.0, 0.0)], &[]).unwrap();
        let input = Schedule {
            placements: vec![
                vec![
                    Placement {
                        start: 0.0,
                        finish: 10.0,
                        processors: 1,
                    },
                    Placement {
                        start: 10.0,
                        finish: 20.0,
                        processors: 2,
                    },
                ],
                vec![Placement {
                    start: 20.0,
                    finish: 25.0,
                    processors: 1,
                }],
            ],
            order: vec![(0, 0), (0, 1), (1, 0)],
        };
        input.verify(&[&p0, &p1], 2).unwrap();
        let out = backfill(&input, &[&p0, &p1], 2);
        out.verify(&[&p0, &p1], 2).unwrap();
        assert_eq!(out.placements[1][0].start, 0.0);
        assert_eq!(out.placements[0][1].start, 10.0, "b is not delayed");
        assert_eq!(out.makespan(), 20.0);
    }

    #[test]
    fn backfilling_never_delays_a_task_even_when_it_cannot_help() {
        // A task that cannot move: two processors busy until 10 by a 2-processor task.
        let p0 = Ptg::new("a", vec![task(20.0, 0.0), task(4.0, 0.0)], &[(0, 1)]).unwrap();
        let input = Schedule {
            placements: vec![vec![
                Placement {
                    start: 0.0,
                    finish: 10.0,
                    processors: 2,
                },
                Placement {
                    start: 10.0,
                    finish: 14.0,
                    processors: 1,
                },
            ]],
            order: vec![(0, 0), (0, 1)],
        };
        let out = backfill(&input, &[&p0], 2);
        assert_eq!(out.placements, input.placements);
    }
}
