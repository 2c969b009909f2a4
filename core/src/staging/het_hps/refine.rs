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
//! batch on 64 nodes spent minutes on passes that each gained a few milliseconds.

use crate::staging::het_hps::mapping_cost::{MappingCost, MoveEffect};
use crate::staging::model::TaskId;

/// Stop a pass after this many tentative moves without a new best.
const FRUITLESS: usize = 50;
/// Stop when a pass improves the objective by less than this fraction.
const MIN_PASS_IMPROVEMENT: f64 = 5e-4;
/// Safety bound on the number of passes.
const MAX_PASSES: usize = 100;

/// Refines the mapping in place; returns (objective before, objective after).
pub(crate) fn refine_mapping(cost: &mut MappingCost<'_>, nodes: usize) -> (f64, f64) {
    let tasks = cost.node_of.len();
    let initial = cost.objective();
    let mut best = initial; // line 1: BEST ← ExecutionTime(M)
    let mut moves_tried = 0usize;
    let mut passes = 0usize;
    for _ in 0..MAX_PASSES {
        passes += 1;
        let pass_start = best;
        let mut locked = vec![false; tasks]; // line 3: unlock all vertices
        let mut tentative: Vec<(TaskId, u32)> = Vec::new();
        let mut improved = false;
        let mut fruitless = 0;
        let mut s = cost.heaviest_node(); // line 4
        loop {
            let candidates: Vec<TaskId> = (0..tasks as TaskId)
                .filter(|&t| !locked[t as usize] && cost.node_of[t as usize] == s)
                .collect();
            if candidates.is_empty() {
                break; // line 6: no unlocked vertex left in s
            }
            // lines 5/7/10/17: move gains of the unlocked vertices of s to the K − 1 others.
            let mut chosen: Option<(TaskId, u32, MoveEffect)> = None;
            let removals: Vec<_> = candidates.iter().map(|&t| cost.removal(t)).collect();
            for to in 0..nodes as u32 {
                if to == s {
                    continue;
                }
                let others = others_max(&cost.exec, s, to);
                for (&t, removal) in candidates.iter().zip(&removals) {
                    let effect = cost.evaluate_move(t, to, others, removal);
                    if chosen.is_none_or(|(ct, cto, ce)| better(effect, ce, (t, to), (ct, cto))) {
                        chosen = Some((t, to, effect));
                    }
                }
            }
            let Some((t, to, _)) = chosen else { break };
            let from = cost.node_of[t as usize];
            cost.move_task(t, to); // line 8: tentatively realize the move
            moves_tried += 1;
            locked[t as usize] = true; // line 9
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
    tracing::debug!(passes, moves_tried, "Algorithm 1 finished");
    (initial, cost.objective())
}

/// max Exec over nodes other than a and b.
fn others_max(exec: &[f64], a: u32, b: u32) -> f64 {
    exec.iter()
        .enumerate()
        .filter(|&(i, _)| i as u32 != a && i as u32 != b)
        .map(|(_, &e)| e)
        .fold(0.0, f64::max)
}

/// Lower objective first; then the lower of the two touched nodes' loads (a move that
/// flattens the peak), then lower ids for determinism.
fn better(a: MoveEffect, b: MoveEffect, ida: (TaskId, u32), idb: (TaskId, u32)) -> bool {
    let ka = (a.objective, a.exec_from.max(a.exec_to));
    let kb = (b.objective, b.exec_from.max(b.exec_to));
    match ka.partial_cmp(&kb) {
        Some(std::cmp::Ordering::Less) => true,
        Some(std::cmp::Ordering::Greater) => false,
        _ => ida < idb,
    }
}
