//! Coarse-grain Allocation, Fine-grain Mapping (CAFM, §4.4), after Dutot et al. [11]:
//! each PTG becomes a moldable job (its HCPA makespan on `1..P` processors, [`crate::ptg::
//! hcpa::MoldableProfile`]); the jobs get rectangular *boxes* (processors × time) from a
//! moldable-job algorithm; each PTG is then scheduled with HCPA inside its box, and the
//! whole schedule is compacted by backfilling ([`super::run`]).
//!
//! - CAFM_LPTF, CAFM_SPTF, CAFM_SAF: the boxes have the dual approximation's allocations
//!   ([`crate::ptg::mrt`]) and are list-scheduled, longest processing time first, shortest
//!   first, or smallest area first (greedy list scheduling: whenever processors free up,
//!   the first box in the list that fits starts).
//! - CAFM_K_SHELVES: the dual approximation only gives `C*max`; boxes come from the
//!   K-shelf packing of increasing shelves with unit weights, and are list-scheduled in
//!   shelf order without ever starting a box before one listed earlier (the shelf order is
//!   kept, never shuffled).

use rand::RngCore;

use super::cra::DUAL_APPROXIMATION_PRECISION;
use super::{Instance, MultiPtgAlgorithm};
use crate::ptg::graph::Ptg;
use crate::ptg::list::{schedule_ready_tasks, Priority};
use crate::ptg::model::MoldableTask;
use crate::ptg::mrt::{dual_approximation, k_shelves};
use crate::ptg::schedule::{Placement, Schedule};

/// The list order of CAFM's boxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxOrder {
    /// CAFM_LPTF: longest processing time first.
    LongestFirst,
    /// CAFM_SPTF: shortest processing time first.
    ShortestFirst,
    /// CAFM_SAF: smallest area (processors × time) first.
    SmallestAreaFirst,
}

/// CAFM_LPTF, CAFM_SPTF or CAFM_SAF.
#[derive(Debug, Clone, Copy)]
pub struct CafmList {
    /// The boxes' list order.
    pub order: BoxOrder,
}

/// CAFM_K_SHELVES.
#[derive(Debug, Clone, Copy)]
pub struct CafmKShelves;

/// Starts of boxes (`processors`, `duration`) list-scheduled by `priorities` on the
/// instance's cluster (each box is a task that takes `duration` on any number of
/// processors: α = 1).
fn place_boxes(
    instance: &Instance,
    boxes: &[(u32, f64)],
    priorities: Vec<Priority>,
    in_order: bool,
) -> Vec<f64> {
    let rigid: Vec<Ptg> = boxes
        .iter()
        .map(|&(_, duration)| {
            let task = MoldableTask {
                sequential_seconds: duration,
                serial_fraction: 1.0,
            };
            Ptg::new("box", vec![task], &[]).expect("one task")
        })
        .collect();
    let graphs: Vec<&Ptg> = rigid.iter().collect();
    let allocations: Vec<[u32; 1]> = boxes.iter().map(|&(p, _)| [p]).collect();
    let refs: Vec<&[u32]> = allocations.iter().map(|a| a.as_slice()).collect();
    let prio: Vec<Vec<Priority>> = priorities.into_iter().map(|p| vec![p]).collect();
    let s = schedule_ready_tasks(&graphs, &refs, &prio, instance.processors, in_order);
    s.placements.iter().map(|p| p[0].start).collect()
}

/// Each PTG scheduled by HCPA inside its box (`processors`, from `start`).
fn fill_boxes(instance: &Instance, boxes: &[(u32, f64)], starts: &[f64]) -> Schedule {
    let sizes: Vec<usize> = instance.ptgs.iter().map(|p| p.ptg.len()).collect();
    let mut schedule = Schedule::empty(&sizes);
    let mut all = Vec::new();
    for (i, p) in instance.ptgs.iter().enumerate() {
        let inside = p.profile().schedule(&p.ptg, boxes[i].0);
        for (v, pl) in inside.placements.iter().enumerate() {
            all.push((
                (i, v),
                Placement {
                    start: pl.start + starts[i],
                    finish: pl.finish + starts[i],
                    processors: pl.processors,
                },
            ));
        }
    }
    all.sort_by(|a, b| a.1.start.total_cmp(&b.1.start).then(a.0.cmp(&b.0)));
    for (id, pl) in all {
        schedule.place(id, pl);
    }
    schedule
}

/// Each PTG's moldable-job times on `1..=P` processors.
fn job_times(instance: &Instance) -> Vec<&[f64]> {
    instance.ptgs.iter().map(|p| p.profile().times()).collect()
}

impl MultiPtgAlgorithm for CafmList {
    fn name(&self) -> &'static str {
        match self.order {
            BoxOrder::LongestFirst => "CAFM_LPTF",
            BoxOrder::ShortestFirst => "CAFM_SPTF",
            BoxOrder::SmallestAreaFirst => "CAFM_SAF",
        }
    }

    fn schedule(&self, instance: &Instance, rng: &mut dyn RngCore) -> Schedule {
        if instance.ptgs.is_empty() {
            return Schedule::empty(&[]);
        }
        let times = job_times(instance);
        let dual = dual_approximation(&times, instance.processors, DUAL_APPROXIMATION_PRECISION);
        let boxes: Vec<(u32, f64)> = dual
            .allocation
            .iter()
            .zip(&times)
            .map(|(&p, t)| (p, t[p as usize - 1]))
            .collect();
        let priorities = boxes
            .iter()
            .map(|&(p, d)| {
                let key = match self.order {
                    BoxOrder::LongestFirst => d,
                    BoxOrder::ShortestFirst => -d,
                    BoxOrder::SmallestAreaFirst => -(p as f64 * d),
                };
                Priority::new(key, rng.next_u64())
            })
            .collect();
        let starts = place_boxes(instance, &boxes, priorities, false);
        fill_boxes(instance, &boxes, &starts)
    }
}

impl MultiPtgAlgorithm for CafmKShelves {
    fn name(&self) -> &'static str {
        "CAFM_K_SHELVES"
    }

    fn schedule(&self, instance: &Instance, rng: &mut dyn RngCore) -> Schedule {
        if instance.ptgs.is_empty() {
            return Schedule::empty(&[]);
        }
        let times = job_times(instance);
        let dual = dual_approximation(&times, instance.processors, DUAL_APPROXIMATION_PRECISION);
        let shelves = k_shelves(&times, instance.processors, dual.makespan);
        let n = instance.ptgs.len();
        let mut boxes = vec![(1u32, 0.0f64); n];
        // List rank: shelf by shelf (shortest shelf first), shortest box first inside one.
        let mut listed: Vec<(usize, usize, f64)> = Vec::with_capacity(n);
        for (k, shelf) in shelves.iter().enumerate() {
            for &(j, p) in &shelf.jobs {
                let d = times[j][p as usize - 1];
                boxes[j] = (p, d);
                listed.push((k, j, d));
            }
        }
        let ties: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        listed.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then(a.2.total_cmp(&b.2))
                .then(ties[a.1].cmp(&ties[b.1]))
        });
        let mut priorities = vec![Priority::new(0.0, 0); n];
        for (rank, &(_, j, _)) in listed.iter().enumerate() {
            priorities[j] = Priority::new(-(rank as f64), 0);
        }
        let starts = place_boxes(instance, &boxes, priorities, true);
        fill_boxes(instance, &boxes, &starts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptg::algorithms::tests::{chain, fork_join, instance};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn boxes_hold_their_ptgs() {
        let inst = instance(
            vec![
                chain("c", 4, 20.0),
                fork_join("f", 6, 10.0),
                fork_join("s", 2, 2.0),
            ],
            10,
        );
        for alg in [
            Box::new(CafmList {
                order: BoxOrder::SmallestAreaFirst,
            }) as Box<dyn MultiPtgAlgorithm>,
            Box::new(CafmList {
                order: BoxOrder::LongestFirst,
            }),
            Box::new(CafmKShelves),
        ] {
            let s = alg.schedule(&inst, &mut ChaCha8Rng::seed_from_u64(4));
            s.verify(&inst.graphs(), 10).unwrap();
            // Inside its box a PTG keeps its HCPA schedule's shape: its span is its time.
            for (i, p) in inst.ptgs.iter().enumerate() {
                let first = s.placements[i]
                    .iter()
                    .map(|q| q.start)
                    .fold(f64::INFINITY, f64::min);
                let span = s.completion(i) - first;
                let times = p.profile().times();
                assert!(
                    times.iter().any(|&t| (t - span).abs() < 1e-6),
                    "{}: {span}",
                    alg.name()
                );
            }
        }
    }

    #[test]
    fn sptf_runs_the_shortest_box_first_and_lptf_the_longest() {
        // Two sequential one-task PTGs (α = 1) on one processor: boxes of 50 and 5.
        let long = Ptg::new("l", vec![crate::ptg::graph::tests::task(50.0, 1.0)], &[]).unwrap();
        let short = Ptg::new("s", vec![crate::ptg::graph::tests::task(5.0, 1.0)], &[]).unwrap();
        let inst = instance(vec![long, short], 1);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let s = CafmList {
            order: BoxOrder::ShortestFirst,
        }
        .schedule(&inst, &mut rng);
        assert_eq!(s.placements[1][0].start, 0.0);
        let l = CafmList {
            order: BoxOrder::LongestFirst,
        }
        .schedule(&inst, &mut rng);
        assert_eq!(l.placements[0][0].start, 0.0);
        let k = CafmKShelves.schedule(&inst, &mut rng);
        assert_eq!(
            k.placements[1][0].start, 0.0,
            "the short job is in the first shelf"
        );
    }
}
