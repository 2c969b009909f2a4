//! Direct K-way mapping refinement, paper Algorithm 1 (after Sanchis' multi-way
//! partitioning): repeatedly take the most loaded node s, tentatively move the unlocked
//! task of s with the best move gain to the best other node, lock it, and whenever the
//! objective of eq. 3 beats the best so far, commit all moves up to this one (negative
//! moves included, which lets the search leave local optima). When the most loaded node
//! changes, the search continues from the new one. Passes repeat until one brings no
//! improvement; uncommitted moves are undone.
//!
//! Practical stopping rules (the paper does not specify any): a pass ends after
//! `FRUITLESS` tentative moves without a new best, and passes stop once one improves the
//! objective by less than `MIN_PASS_IMPROVEMENT` (relative). Without them a 20,000-task
//! batch on 64 nodes spent minutes on passes that each gained a few milliseconds. A step
//! weighs at most `CANDIDATES` tasks of the heaviest node, those whose leaving saves the
//! most (see `candidates`); nodes with fewer unlocked tasks are searched in full, as in the
//! paper. The evaluations come from the gain cache of `mapping_cost`.

use crate::staging::het_hps::candidates::Candidates;
use crate::staging::het_hps::mapping_cost::{MappingCost, MoveEffect};
use crate::staging::model::TaskId;

/// Stop a pass after this many tentative moves without a new best.
const FRUITLESS: usize = 50;
/// Stop when a pass improves the objective by less than this fraction.
const MIN_PASS_IMPROVEMENT: f64 = 5e-4;
/// Safety bound on the number of passes.
const MAX_PASSES: usize = 100;
/// The most tasks of the heaviest node a step weighs.
pub(crate) const CANDIDATES: usize = 256;

/// Refines the mapping in place; returns (objective before, objective after).
pub(crate) fn refine_mapping(cost: &mut MappingCost<'_>, nodes: usize) -> (f64, f64) {
    let initial = cost.objective();
    let mut best = initial; // line 1: BEST ← ExecutionTime(M)
    let mut moves_tried = 0usize;
    let mut passes = 0usize;
    for _ in 0..MAX_PASSES {
        passes += 1;
        let pass_start = best;
        let mut unlocked = Candidates::new(cost, nodes); // line 3: unlock all vertices
        let mut tentative: Vec<(TaskId, u32)> = Vec::new();
        let mut improved = false;
        let mut fruitless = 0;
        let mut s = cost.heaviest_node(); // line 4
                                          // line 6: stop when s has no unlocked vertex left
        while let Some((t, to)) = best_move(cost, &unlocked, s, nodes) {
            let from = cost.node_of[t as usize];
            unlocked.lock(t, from); // line 9
            cost.move_task(t, to); // line 8: tentatively realize the move
            unlocked.refresh(cost);
            moves_tried += 1;
            tentative.push((t, from));
            let now = cost.objective();
            if now < best * (1.0 - 1e-12) {
                // lines 11–13: commit the moves up to this one
                best = now;
                tentative.clear();
                improved = true;
                fruitless = 0;
            } else {
                fruitless += 1;
                if fruitless > FRUITLESS {
                    break;
                }
            }
            s = cost.heaviest_node(); // lines 14–16
        }
        for &(t, from) in tentative.iter().rev() {
            cost.move_task(t, from);
        }
        if !improved || best > pass_start * (1.0 - MIN_PASS_IMPROVEMENT) {
            break; // line 18
        }
    }
    cost.take_changed();
    tracing::debug!(passes, moves_tried, "Algorithm 1 finished");
    (initial, cost.objective())
}

/// Lines 5/7/10/17: the best move of an unlocked task of node s to one of the K − 1 others.
/// A pair whose lower bound already loses to the best so far, in the full order of
/// [`better`] (objective, peak, ids), is not evaluated; nor is a task whose bound over all
/// targets loses. The bound adds no file to the target, except on a target holding none of
/// the task's files, whose IO part is then exact. The choice is the same as evaluating
/// every pair.
fn best_move(
    cost: &mut MappingCost<'_>,
    unlocked: &Candidates,
    s: u32,
    nodes: usize,
) -> Option<(TaskId, u32)> {
    let others = OthersMax::new(&cost.exec, s);
    let others: Vec<f64> = (0..nodes as u32).map(|to| others.without(to)).collect();
    let others_min = others
        .iter()
        .enumerate()
        .filter(|&(to, _)| to as u32 != s)
        .map(|(_, &o)| o)
        .fold(f64::INFINITY, f64::min);
    let mut chosen: Option<(TaskId, u32, MoveEffect)> = None;
    for t in unlocked.first(s, CANDIDATES) {
        let exec_from = cost.exec_after_leaving(t);
        let io_floor = cost.io_after_leaving(t);
        // On a node holding none of t's files, the IO part is known exactly.
        let io_far = cost.io_if_far(t);
        // Whatever the target, the objective is at least this, the peak at least exec_from.
        let task_floor = MoveEffect {
            objective: others_min.max(exec_from) + io_floor,
            exec_from,
            exec_to: exec_from,
        };
        if chosen.is_some_and(|(ct, cto, ce)| !better(task_floor, ce, (t, 0), (ct, cto))) {
            continue;
        }
        for to in 0..nodes as u32 {
            if to == s {
                continue;
            }
            let exec_with = cost.exec_with(t, to);
            let io_bound = match io_far {
                Some(io) if cost.is_far(t, to) => io,
                _ => io_floor,
            };
            let floor = MoveEffect {
                objective: others[to as usize].max(exec_from).max(exec_with) + io_bound,
                exec_from,
                exec_to: exec_with,
            };
            if chosen.is_some_and(|(ct, cto, ce)| !better(floor, ce, (t, to), (ct, cto))) {
                continue;
            }
            let effect = cost.evaluate_move(t, to, others[to as usize], exec_from);
            if chosen.is_none_or(|(ct, cto, ce)| better(effect, ce, (t, to), (ct, cto))) {
                chosen = Some((t, to, effect));
            }
        }
    }
    chosen.map(|(t, to, _)| (t, to))
}

/// max Exec over the nodes other than s and a target, from the two largest loads besides
/// s (0 when there are none, like a fold from 0).
struct OthersMax {
    first: (usize, f64),
    second: f64,
}

impl OthersMax {
    fn new(exec: &[f64], s: u32) -> Self {
        let mut first = (usize::MAX, 0.0f64);
        let mut second = 0.0f64;
        for (i, &e) in exec.iter().enumerate() {
            if i as u32 == s {
                continue;
            }
            if first.0 == usize::MAX || e > first.1 {
                second = second.max(first.1);
                first = (i, e);
            } else {
                second = second.max(e);
            }
        }
        OthersMax {
            first: (first.0, first.1.max(0.0)),
            second,
        }
    }

    fn without(&self, to: u32) -> f64 {
        if to as usize == self.first.0 {
            self.second
        } else {
            self.first.1
        }
    }
}

/// Lower objective first; then the lower of the two touched nodes' loads (a move that
/// flattens the peak), then lower ids for determinism.
pub(crate) fn better(a: MoveEffect, b: MoveEffect, ida: (TaskId, u32), idb: (TaskId, u32)) -> bool {
    let ka = (a.objective, a.exec_from.max(a.exec_to));
    let kb = (b.objective, b.exec_from.max(b.exec_to));
    match ka.partial_cmp(&kb) {
        Some(std::cmp::Ordering::Less) => true,
        Some(std::cmp::Ordering::Greater) => false,
        _ => ida < idb,
    }
}
