//! Rebalancer: moves vertices out of blocks above their maximum weight, always to a block
//! with room, choosing the moves with the best km1 gain first (partitioning.md item 12).
//! Works with per-block targets, so heterogeneous capacities use the same code.

use std::collections::BinaryHeap;

use crate::staging::hypergraph::VertexId;
use crate::staging::partition::phg::{GainScratch, PartitionedHypergraph};

/// True if every block is within its maximum weight.
pub(crate) fn is_balanced(phg: &PartitionedHypergraph<'_>, max_weights: &[i64]) -> bool {
    phg.part_weights()
        .iter()
        .zip(max_weights)
        .all(|(w, m)| w <= m)
}

/// Moves vertices out of overloaded blocks until all fit or no feasible move is left.
/// Returns true if the partition is balanced afterwards.
pub(crate) fn rebalance(phg: &mut PartitionedHypergraph<'_>, max_weights: &[i64]) -> bool {
    if is_balanced(phg, max_weights) {
        return true;
    }
    let mut scratch = GainScratch::new(phg.k);
    let n = phg.hg.num_vertices() as VertexId;
    let overloaded =
        |phg: &PartitionedHypergraph<'_>, b: u32| phg.part_weight(b) > max_weights[b as usize];
    // Lighter vertices first among equal gains: they fix overloads with less disturbance.
    let mut heap: BinaryHeap<(i64, i64, u32)> = BinaryHeap::new();
    for v in 0..n {
        if overloaded(phg, phg.part(v)) {
            if let Some(m) = phg.best_any_move(v, max_weights, &mut scratch) {
                heap.push((m.gain, -phg.hg.vertex_weight(v), u32::MAX - v));
            }
        }
    }
    while let Some((gain, _, rv)) = heap.pop() {
        let v = u32::MAX - rv;
        if !overloaded(phg, phg.part(v)) {
            continue;
        }
        let Some(m) = phg.best_any_move(v, max_weights, &mut scratch) else {
            continue;
        };
        if m.gain < gain {
            heap.push((m.gain, -phg.hg.vertex_weight(v), rv));
            continue;
        }
        phg.move_vertex(v, m.to, |_, _, _| {});
        if is_balanced(phg, max_weights) {
            return true;
        }
    }
    is_balanced(phg, max_weights)
}
