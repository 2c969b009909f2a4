//! The algorithms after Zhao and Sakellariou ([32], §4.2), with HCPA in place of HEFT.
//!
//! - **C1** joins all PTGs under a new zero-cost entry and exit task and schedules the
//!   composite PTG with HCPA (allocation and mapping) on the whole cluster.
//! - **C4** first computes each PTG's makespan alone (`C*_max_i`, HCPA), then grafts the
//!   shorter PTGs onto the longest one and schedules that composite with HCPA. [32]'s
//!   grafting rule is not given in the paper; our reading of "at judicious locations" is
//!   one that does not lengthen the composite's critical path: a PTG of length `C*_i`
//!   hangs below the longest PTG's task that ends last, in that PTG's schedule alone, no
//!   later than `C*_longest − C*_i` (so all PTGs would end together), or below the
//!   composite's entry if no task ends that early.
//! - **F1** and **F2** schedule one task at a time from the PTG with the worst (largest)
//!   current stretch, ties to the highest bottom level left, on the
//!   processors free earliest, each PTG with its allocation alone. F1 sets a PTG's stretch
//!   to its last task's end over that task's end alone; F2 updates every PTG after each
//!   step: at the end `ct` of the task just placed, it takes each PTG's most recently
//!   placed task running at `ct`, the fraction of it done by `ct`, and the time that
//!   fraction is reached alone; the PTG's stretch is `ct` over that time. §4.2 says the
//!   stretch of a PTG none of whose tasks is placed yet is zero, in [32]'s inverted
//!   definition (there, lower is worse); in the standard definition used here such a PTG
//!   has the worst stretch, so it is served first, as in [32].

use std::collections::BinaryHeap;

use rand::RngCore;

use super::{Instance, MultiPtgAlgorithm};
use crate::ptg::graph::Ptg;
use crate::ptg::hcpa;
use crate::ptg::list::{schedule_in_priority_order, Priority};
use crate::ptg::model::MoldableTask;
use crate::ptg::schedule::{Placement, ProcessorPool, Schedule, TIME_TOLERANCE};

/// How C1 and C4 join the PTGs into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompositeKind {
    /// C1: all entry tasks below one new entry, all exit tasks above one new exit.
    ForkJoin,
    /// C4: shorter PTGs grafted into the longest one.
    Grafted,
}

/// C1 or C4.
#[derive(Debug, Clone, Copy)]
pub struct Composite {
    /// How the PTGs are joined.
    pub kind: CompositeKind,
}

/// The composite PTG and where each PTG's tasks start in it (task 0 is the new entry, the
/// last task the new exit).
fn composite(instance: &Instance, kind: CompositeKind) -> (Ptg, Vec<usize>) {
    let mut tasks = vec![MoldableTask::EMPTY];
    let mut offsets = Vec::with_capacity(instance.ptgs.len());
    for p in &instance.ptgs {
        offsets.push(tasks.len());
        tasks.extend_from_slice(p.ptg.tasks());
    }
    let exit = tasks.len();
    tasks.push(MoldableTask::EMPTY);
    let mut edges = Vec::new();
    for (p, &off) in instance.ptgs.iter().zip(&offsets) {
        edges.extend(p.ptg.edges().into_iter().map(|(a, b)| (a + off, b + off)));
        edges.extend(p.ptg.exit_tasks().into_iter().map(|v| (v + off, exit)));
    }
    // Each PTG's entry tasks hang below one task of the composite: the new entry (C1, and
    // the longest PTG in C4) or a graft point in the longest PTG (C4).
    let mut parent_of = vec![0usize; instance.ptgs.len()];
    if kind == CompositeKind::Grafted && !instance.ptgs.is_empty() {
        let longest = (0..instance.ptgs.len())
            .max_by(|&a, &b| {
                instance.ptgs[a]
                    .dedicated_makespan()
                    .total_cmp(&instance.ptgs[b].dedicated_makespan())
                    .then(b.cmp(&a))
            })
            .expect("not empty");
        let base = &instance.ptgs[longest];
        for (i, p) in instance.ptgs.iter().enumerate() {
            if i == longest {
                continue;
            }
            let latest_start = base.dedicated_makespan() - p.dedicated_makespan();
            let graft = base
                .alone
                .placements
                .iter()
                .enumerate()
                .filter(|(_, pl)| pl.finish <= latest_start)
                .max_by(|a, b| a.1.finish.total_cmp(&b.1.finish).then(b.0.cmp(&a.0)));
            if let Some((u, _)) = graft {
                parent_of[i] = u + offsets[longest];
            }
        }
    }
    for (i, p) in instance.ptgs.iter().enumerate() {
        edges.extend(
            p.ptg
                .entry_tasks()
                .into_iter()
                .map(|v| (parent_of[i], v + offsets[i])),
        );
    }
    let g = Ptg::new("composite", tasks, &edges).expect("joining DAGs keeps a DAG");
    (g, offsets)
}

impl MultiPtgAlgorithm for Composite {
    fn name(&self) -> &'static str {
        match self.kind {
            CompositeKind::ForkJoin => "C1",
            CompositeKind::Grafted => "C4",
        }
    }

    fn schedule(&self, instance: &Instance, rng: &mut dyn RngCore) -> Schedule {
        let (g, offsets) = composite(instance, self.kind);
        let allocation = hcpa::allocate(&g, instance.processors, instance.settings());
        let bl = g.bottom_levels(&allocation);
        let priorities: Vec<Priority> = bl
            .iter()
            .map(|&b| Priority::new(b, rng.next_u64()))
            .collect();
        let joined =
            schedule_in_priority_order(&[&g], &[&allocation], &[priorities], instance.processors);
        // Back to one placement per task of each PTG.
        let mut owner = vec![None; g.len()];
        for (i, p) in instance.ptgs.iter().enumerate() {
            for v in 0..p.ptg.len() {
                owner[offsets[i] + v] = Some((i, v));
            }
        }
        let sizes: Vec<usize> = instance.ptgs.iter().map(|p| p.ptg.len()).collect();
        let mut schedule = Schedule::empty(&sizes);
        for &(_, w) in &joined.order {
            if let Some(id) = owner[w] {
                schedule.place(id, joined.placements[0][w]);
            }
        }
        schedule
    }
}

/// How F1 and F2 estimate the current stretch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StretchEstimate {
    /// F1: only the PTG just served, from its last task.
    LastTask,
    /// F2: every PTG, from its task running when the last placed task ends.
    AllGraphs,
}

/// F1 or F2.
#[derive(Debug, Clone, Copy)]
pub struct FairnessDriven {
    /// The stretch estimate.
    pub estimate: StretchEstimate,
}

impl MultiPtgAlgorithm for FairnessDriven {
    fn name(&self) -> &'static str {
        match self.estimate {
            StretchEstimate::LastTask => "F1",
            StretchEstimate::AllGraphs => "F2",
        }
    }

    fn schedule(&self, instance: &Instance, rng: &mut dyn RngCore) -> Schedule {
        let n = instance.ptgs.len();
        let sizes: Vec<usize> = instance.ptgs.iter().map(|p| p.ptg.len()).collect();
        let mut schedule = Schedule::empty(&sizes);
        let mut pool = ProcessorPool::new(instance.processors);
        let mut placeable: Vec<BinaryHeap<(Priority, usize)>> = vec![BinaryHeap::new(); n];
        let mut waiting: Vec<Vec<usize>> = Vec::with_capacity(n);
        let mut priorities: Vec<Vec<Priority>> = Vec::with_capacity(n);
        for (i, p) in instance.ptgs.iter().enumerate() {
            let g = &p.ptg;
            priorities.push(
                p.alone
                    .bottom_levels
                    .iter()
                    .map(|&b| Priority::new(b, rng.next_u64()))
                    .collect(),
            );
            waiting.push((0..g.len()).map(|v| g.predecessors(v).len()).collect());
            for v in g.entry_tasks() {
                placeable[i].push((priorities[i][v], v));
            }
        }
        // No task placed (or only tasks of zero time): served first.
        let mut stretch = vec![f64::INFINITY; n];
        let mut placed_order: Vec<Vec<usize>> = vec![Vec::new(); n];
        // The PTG with the worst stretch, then the highest bottom level left.
        let worst = |stretch: &[f64], placeable: &[BinaryHeap<(Priority, usize)>]| {
            (0..n)
                .filter(|&i| !placeable[i].is_empty())
                .max_by(|&a, &b| {
                    stretch[a]
                        .total_cmp(&stretch[b])
                        .then(placeable[a].peek().cmp(&placeable[b].peek()))
                })
        };
        while let Some(i) = worst(&stretch, &placeable) {
            let (_, v) = placeable[i].pop().expect("not empty");
            let p = &instance.ptgs[i];
            let ready = p
                .ptg
                .predecessors(v)
                .iter()
                .map(|&u| schedule.placements[i][u].finish)
                .fold(0.0, f64::max);
            let count = p.alone.allocation[v];
            let duration = p.ptg.task(v).time(count);
            let start = pool.place(ready, count, duration);
            let end = start + duration;
            schedule.place(
                (i, v),
                Placement {
                    start,
                    finish: end,
                    processors: count,
                },
            );
            placed_order[i].push(v);
            for &s in p.ptg.successors(v) {
                waiting[i][s] -= 1;
                if waiting[i][s] == 0 {
                    placeable[i].push((priorities[i][s], s));
                }
            }
            match self.estimate {
                StretchEstimate::LastTask => {
                    let alone = p.alone.placements[v].finish;
                    if alone > 0.0 {
                        stretch[i] = end / alone;
                    }
                }
                StretchEstimate::AllGraphs => {
                    let slack = TIME_TOLERANCE * end.max(1.0);
                    for j in 0..n {
                        let running = placed_order[j].iter().rev().find(|&&u| {
                            let pl = schedule.placements[j][u];
                            pl.start <= end + slack && end <= pl.finish + slack
                        });
                        let Some(&u) = running else {
                            continue;
                        };
                        let now = schedule.placements[j][u];
                        let alone = instance.ptgs[j].alone.placements[u];
                        let done = if now.finish > now.start {
                            ((end - now.start) / (now.finish - now.start)).clamp(0.0, 1.0)
                        } else {
                            1.0
                        };
                        let reached_alone = alone.start + done * (alone.finish - alone.start);
                        if reached_alone > 0.0 {
                            stretch[j] = end / reached_alone;
                        }
                    }
                }
            }
        }
        schedule
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptg::algorithms::tests::{chain, fork_join, instance};
    use crate::ptg::graph::tests::task;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn c1_joins_every_ptg_under_one_entry_and_exit() {
        let inst = instance(vec![chain("a", 3, 10.0), fork_join("b", 4, 10.0)], 4);
        let (g, offsets) = composite(&inst, CompositeKind::ForkJoin);
        assert_eq!(g.len(), 1 + 3 + 6 + 1);
        assert_eq!(offsets, vec![1, 4]);
        assert_eq!(g.entry_tasks(), vec![0]);
        assert_eq!(g.exit_tasks(), vec![g.len() - 1]);
        assert_eq!(g.successors(0), &[1, 4]);
    }

    #[test]
    fn c4_hangs_a_short_ptg_where_it_ends_with_the_long_one() {
        // On 1 processor (allocations all 1): the chain of 4 × 10 s ends alone at 10, 20,
        // 30, 40; a one-task PTG of 15 s must start by 40 − 15 = 25, so it hangs below the
        // chain's second task (ends at 20).
        let short = Ptg::new("short", vec![task(15.0, 0.0)], &[]).unwrap();
        let inst = instance(vec![short, chain("long", 4, 10.0)], 1);
        let (g, offsets) = composite(&inst, CompositeKind::Grafted);
        assert_eq!(g.predecessors(offsets[0]), &[offsets[1] + 1]);
        assert_eq!(g.predecessors(offsets[1]), &[0]);
        let s = Composite {
            kind: CompositeKind::Grafted,
        }
        .schedule(&inst, &mut ChaCha8Rng::seed_from_u64(0));
        s.verify(&inst.graphs(), 1).unwrap();
        assert!(s.placements[0][0].start >= 20.0);
    }

    #[test]
    fn f1_serves_the_ptg_with_the_worst_stretch() {
        // Two identical chains of two 10 s sequential tasks on one processor. Neither has a
        // task placed, so either goes first; after its first task (stretch 10/10 = 1) the
        // other, still unserved, goes (its first task ends at 20, alone at 10: stretch 2);
        // that one is now the worst, so its second task goes (30/20 = 1.5), then the first
        // PTG's second task.
        let c = || Ptg::new("c", vec![task(10.0, 1.0), task(10.0, 1.0)], &[(0, 1)]).unwrap();
        let inst = instance(vec![c(), c()], 1);
        let s = FairnessDriven {
            estimate: StretchEstimate::LastTask,
        }
        .schedule(&inst, &mut ChaCha8Rng::seed_from_u64(5));
        s.verify(&inst.graphs(), 1).unwrap();
        let first = s.order[0].0;
        let other = 1 - first;
        assert_eq!(
            s.order,
            vec![(first, 0), (other, 0), (other, 1), (first, 1)],
            "the worst stretch first"
        );
    }

    #[test]
    fn f2_updates_every_ptg_from_its_running_task() {
        // PTG 0: one sequential task of 30 s (α = 1: alone it keeps 1 processor); PTG 1: a
        // chain of three 10 s tasks with α = 0.2, which HCPA alone on 2 processors gives 2
        // processors each (6 s each, C* = 18). Neither is served yet; PTG 0 has the higher
        // bottom level (30 > 18) and goes first on one processor; each chain task needs
        // both processors, so the chain waits until 30 and ends at 48.
        let long = Ptg::new("long", vec![task(30.0, 1.0)], &[]).unwrap();
        let inst = instance(vec![long, chain("c", 3, 10.0)], 2);
        let s = FairnessDriven {
            estimate: StretchEstimate::AllGraphs,
        }
        .schedule(&inst, &mut ChaCha8Rng::seed_from_u64(1));
        s.verify(&inst.graphs(), 2).unwrap();
        assert_eq!(s.placements[0][0].start, 0.0);
        assert_eq!(s.placements[1][0].start, 30.0);
        assert!((s.makespan() - 48.0).abs() < 1e-9);
    }
}
