//! List scheduling of the tasks of several PTGs with given allocations and priorities,
//! the mapping step every algorithm shares. Two flavours:
//!
//! - [`schedule_in_priority_order`]: the static list of HCPA's mapping and of SELFISH
//!   (§4.1): tasks are taken by decreasing priority and each goes, as early as possible,
//!   after everything already placed on its processors ([`ProcessorPool`]).
//! - [`schedule_ready_tasks`]: the list scheduling "only on ready tasks" of the CRA
//!   mapping (§4.3): time advances from event to event and, at each instant, the ready
//!   tasks (all predecessors ended) start in priority order while processors are free,
//!   so a short PTG can start at time 0. The same engine places CAFM's boxes (§4.4).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::graph::Ptg;
use super::schedule::{Placement, ProcessorPool, Schedule, TaskId};

/// A task's rank in a list: compared lexicographically (`major`, then `minor`, then
/// `tie`), the greatest first. `tie` is random where the paper breaks ties randomly
/// (§4.1), else it encodes a fixed order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Priority {
    /// The main key (e.g. the bottom level).
    pub major: f64,
    /// The key for equal `major` values.
    pub minor: f64,
    /// The last resort.
    pub tie: u64,
}

impl Priority {
    /// A priority by one key, ties broken by `tie`.
    pub fn new(major: f64, tie: u64) -> Priority {
        Priority {
            major,
            minor: 0.0,
            tie,
        }
    }
}

impl Eq for Priority {}

impl PartialOrd for Priority {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Priority {
    fn cmp(&self, other: &Self) -> Ordering {
        self.major
            .total_cmp(&other.major)
            .then(self.minor.total_cmp(&other.minor))
            .then(self.tie.cmp(&other.tie))
    }
}

/// Priorities that take the tasks of one PTG in decreasing `keys` order, ties to the lower
/// task index (deterministic, as HCPA's own mapping).
pub fn by_decreasing(keys: &[f64]) -> Vec<Priority> {
    keys.iter()
        .enumerate()
        .map(|(v, &k)| Priority::new(k, u64::MAX - v as u64))
        .collect()
}

/// Counts of unplaced predecessors, per PTG and task.
fn predecessor_counts(ptgs: &[&Ptg]) -> Vec<Vec<usize>> {
    ptgs.iter()
        .map(|g| (0..g.len()).map(|v| g.predecessors(v).len()).collect())
        .collect()
}

/// The static list scheduling of HCPA's mapping (§4.1; frs69wq/biCPA `map_allocations`):
/// repeatedly take the placeable task (all predecessors placed) of highest priority and
/// start it, on `allocations[i][v]` processors, as early as its predecessors' ends and
/// the processors' free times allow. With priorities that decrease along edges (bottom
/// levels) this is exactly "sort all tasks, place them in that order".
pub fn schedule_in_priority_order(
    ptgs: &[&Ptg],
    allocations: &[&[u32]],
    priorities: &[Vec<Priority>],
    processors: u32,
) -> Schedule {
    let mut pool = ProcessorPool::new(processors);
    let mut schedule = Schedule::empty(&ptgs.iter().map(|g| g.len()).collect::<Vec<_>>());
    let mut waiting = predecessor_counts(ptgs);
    let mut placeable: BinaryHeap<(Priority, usize, usize)> = BinaryHeap::new();
    for (i, g) in ptgs.iter().enumerate() {
        for v in g.entry_tasks() {
            placeable.push((priorities[i][v], i, v));
        }
    }
    while let Some((_, i, v)) = placeable.pop() {
        let g = ptgs[i];
        let ready = g
            .predecessors(v)
            .iter()
            .map(|&u| schedule.placements[i][u].finish)
            .fold(0.0, f64::max);
        let p = allocations[i][v];
        let duration = g.task(v).time(p);
        let start = pool.place(ready, p, duration);
        schedule.place(
            (i, v),
            Placement {
                start,
                finish: start + duration,
                processors: p,
            },
        );
        for &s in g.successors(v) {
            waiting[i][s] -= 1;
            if waiting[i][s] == 0 {
                placeable.push((priorities[i][s], i, s));
            }
        }
    }
    schedule
}

/// A running task in the event loop, ordered by earliest end first.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Running {
    finish: f64,
    task: TaskId,
    processors: u32,
}

impl Eq for Running {}

impl PartialOrd for Running {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Running {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest end comes first.
        other
            .finish
            .total_cmp(&self.finish)
            .then(other.task.cmp(&self.task))
    }
}

/// Event-driven list scheduling of ready tasks (the CRA mapping, §4.3): at time 0 and at
/// every task end, the ready tasks (all predecessors ended) are scanned by decreasing
/// priority and each one whose processors are free starts now. With `in_order`, the scan
/// stops at the first ready task that does not fit, so tasks start in list order (used
/// for CAFM_K_SHELVES' boxes, whose shelf order must be kept); otherwise later tasks that
/// fit go first (greedy list scheduling, Graham's).
pub fn schedule_ready_tasks(
    ptgs: &[&Ptg],
    allocations: &[&[u32]],
    priorities: &[Vec<Priority>],
    processors: u32,
    in_order: bool,
) -> Schedule {
    assert!(
        allocations
            .iter()
            .flat_map(|a| a.iter())
            .all(|&p| p <= processors),
        "a task needs more than the {processors} processors of the cluster"
    );
    let mut schedule = Schedule::empty(&ptgs.iter().map(|g| g.len()).collect::<Vec<_>>());
    let mut waiting = predecessor_counts(ptgs);
    let mut ready: Vec<(Priority, TaskId)> = Vec::new();
    for (i, g) in ptgs.iter().enumerate() {
        for v in g.entry_tasks() {
            ready.push((priorities[i][v], (i, v)));
        }
    }
    let mut running: BinaryHeap<Running> = BinaryHeap::new();
    let mut free = processors;
    let mut now = 0.0;
    loop {
        // Start what fits now; tasks of zero duration end at once and may make others
        // ready at the same instant, hence the inner loop.
        loop {
            ready.sort_by_key(|r| std::cmp::Reverse(r.0));
            let mut ended_now = Vec::new();
            let mut k = 0;
            while k < ready.len() {
                let (i, v) = ready[k].1;
                let p = allocations[i][v];
                let duration = ptgs[i].task(v).time(p);
                let holds = if duration > 0.0 { p } else { 0 };
                if holds > free {
                    if in_order {
                        break;
                    }
                    k += 1;
                    continue;
                }
                ready.remove(k);
                schedule.place(
                    (i, v),
                    Placement {
                        start: now,
                        finish: now + duration,
                        processors: p,
                    },
                );
                if holds == 0 {
                    ended_now.push((i, v));
                } else {
                    free -= holds;
                    running.push(Running {
                        finish: now + duration,
                        task: (i, v),
                        processors: holds,
                    });
                }
            }
            if ended_now.is_empty() {
                break;
            }
            for (i, v) in ended_now {
                release_successors(ptgs, &priorities[i], &mut waiting[i], i, v, &mut ready);
            }
        }
        let Some(next) = running.pop() else {
            break;
        };
        now = next.finish;
        let mut ended = vec![next];
        while running.peek().is_some_and(|r| r.finish <= now) {
            ended.push(running.pop().expect("peeked"));
        }
        for r in ended {
            free += r.processors;
            let (i, v) = r.task;
            release_successors(ptgs, &priorities[i], &mut waiting[i], i, v, &mut ready);
        }
    }
    debug_assert!(ready.is_empty(), "tasks left unscheduled: {ready:?}");
    schedule
}

/// Task `v` of PTG `i` ended: its successors with no predecessor left become ready.
fn release_successors(
    ptgs: &[&Ptg],
    priorities: &[Priority],
    waiting: &mut [usize],
    i: usize,
    v: usize,
    ready: &mut Vec<(Priority, TaskId)>,
) {
    for &s in ptgs[i].successors(v) {
        waiting[s] -= 1;
        if waiting[s] == 0 {
            ready.push((priorities[s], (i, s)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptg::graph::tests::{diamond, task};

    #[test]
    fn priority_order_is_lexicographic_greatest_first() {
        let a = Priority {
            major: 2.0,
            minor: 0.0,
            tie: 0,
        };
        let b = Priority {
            major: 1.0,
            minor: 9.0,
            tie: 9,
        };
        let c = Priority {
            major: 2.0,
            minor: 1.0,
            tie: 0,
        };
        assert!(a > b && c > a);
        assert_eq!(
            by_decreasing(&[3.0, 3.0])[0].cmp(&by_decreasing(&[3.0, 3.0])[1]),
            Ordering::Greater
        );
    }

    #[test]
    fn static_list_places_a_diamond_by_bottom_level() {
        // Diamond 10 / 40 / 20 / 10 s, perfectly parallel, each task on 2 of 2 processors
        // except task 2 (1 processor): 0 [0, 5) on 2; bl order 0, 1, 2, 3.
        // 1 on 2: [5, 25); 2 on 1 goes after: [25, 45); 3 on 2: [45, 50).
        let g = diamond();
        let alloc = [2, 2, 1, 2];
        let bl = g.bottom_levels(&alloc);
        let s = schedule_in_priority_order(&[&g], &[&alloc], &[by_decreasing(&bl)], 2);
        s.verify(&[&g], 2).unwrap();
        let starts: Vec<f64> = s.placements[0].iter().map(|p| p.start).collect();
        assert_eq!(starts, vec![0.0, 5.0, 25.0, 45.0]);
        assert_eq!(s.order, vec![(0, 0), (0, 1), (0, 2), (0, 3)]);
    }

    #[test]
    fn ready_list_lets_a_short_ptg_start_at_time_zero() {
        // PTG 0: a chain of two 1-processor tasks of 10 s, then a 3-processor task.
        // PTG 1: one 1-processor task of 5 s with a lower priority. On 3 processors the
        // ready list starts it at 0 beside PTG 0's first task.
        let long = Ptg::new(
            "long",
            vec![task(10.0, 0.0), task(10.0, 0.0), task(30.0, 0.0)],
            &[(0, 1), (1, 2)],
        )
        .unwrap();
        let short = Ptg::new("short", vec![task(5.0, 0.0)], &[]).unwrap();
        let alloc_long = [1, 1, 3];
        let alloc_short = [1];
        let prio = vec![by_decreasing(&[30.0, 20.0, 10.0]), by_decreasing(&[1.0])];
        let s = schedule_ready_tasks(
            &[&long, &short],
            &[&alloc_long, &alloc_short],
            &prio,
            3,
            false,
        );
        s.verify(&[&long, &short], 3).unwrap();
        assert_eq!(s.placements[1][0].start, 0.0);
        assert_eq!(s.placements[0][2].start, 20.0);
        assert_eq!(s.makespan(), 30.0);
    }

    #[test]
    fn in_order_ready_list_keeps_the_list_order() {
        // Three independent single-task PTGs on 4 processors: A needs 3 (10 s), B needs 3
        // (10 s), C needs 1 (10 s), listed A, B, C. Greedy starts C beside A at 0; in order,
        // C waits behind B.
        let g = |s| Ptg::new("x", vec![task(s, 1.0)], &[]).unwrap();
        let (a, b, c) = (g(10.0), g(10.0), g(10.0));
        let prio = vec![
            by_decreasing(&[3.0]),
            by_decreasing(&[2.0]),
            by_decreasing(&[1.0]),
        ];
        let alloc: [&[u32]; 3] = [&[3], &[3], &[1]];
        let greedy = schedule_ready_tasks(&[&a, &b, &c], &alloc, &prio, 4, false);
        assert_eq!(greedy.placements[2][0].start, 0.0);
        assert_eq!(greedy.placements[1][0].start, 10.0);
        let ordered = schedule_ready_tasks(&[&a, &b, &c], &alloc, &prio, 4, true);
        assert_eq!(ordered.placements[1][0].start, 10.0);
        assert_eq!(ordered.placements[2][0].start, 10.0);
        ordered.verify(&[&a, &b, &c], 4).unwrap();
    }

    #[test]
    fn zero_cost_tasks_take_no_processor_and_release_at_once() {
        use crate::ptg::model::MoldableTask;
        // entry (empty) -> two 2-processor tasks -> exit (empty), on 2 processors.
        let g = Ptg::new(
            "fork",
            vec![
                MoldableTask::EMPTY,
                task(4.0, 0.0),
                task(4.0, 0.0),
                MoldableTask::EMPTY,
            ],
            &[(0, 1), (0, 2), (1, 3), (2, 3)],
        )
        .unwrap();
        let alloc = [1, 2, 2, 1];
        let prio = vec![by_decreasing(&g.bottom_levels(&alloc))];
        let s = schedule_ready_tasks(&[&g], &[&alloc], &prio, 2, false);
        s.verify(&[&g], 2).unwrap();
        assert_eq!(s.makespan(), 4.0);
        assert_eq!(s.placements[0][3].start, 4.0);
        let t = schedule_in_priority_order(&[&g], &[&alloc], &prio, 2);
        assert_eq!(t.placements, s.placements);
    }
}
