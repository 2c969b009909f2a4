//! Size-constrained label propagation: every boundary vertex, in a seeded random order,
//! moves to the adjacent block with the best positive km1 gain (or a zero-gain move that
//! improves balance). Cheap, and it repairs most of the error left by projecting a coarse
//! partition onto a finer level (partitioning.md item 10).

use rand::seq::SliceRandom;
use rand::Rng;

use crate::staging::hypergraph::VertexId;
use crate::staging::partition::phg::{GainScratch, PartitionedHypergraph};

/// Runs up to `rounds` rounds; returns the total km1 improvement.
pub(crate) fn label_propagation(
    phg: &mut PartitionedHypergraph<'_>,
    max_weights: &[i64],
    rounds: usize,
    rng: &mut impl Rng,
) -> i64 {
    let n = phg.hg.num_vertices();
    let mut order: Vec<VertexId> = (0..n as VertexId).collect();
    order.shuffle(rng);
    let mut scratch = GainScratch::new(phg.k);
    let mut improvement = 0;
    for _ in 0..rounds {
        let mut round_gain = 0;
        let mut moved = 0usize;
        for &v in &order {
            if !phg.is_boundary(v) {
                continue;
            }
            let Some(m) = phg.best_adjacent_move(v, max_weights, &mut scratch) else {
                continue;
            };
            let c = phg.hg.vertex_weight(v);
            let from = phg.part(v);
            let balances = phg.part_weight(m.to) + c < phg.part_weight(from) && m.gain == 0;
            if m.gain > 0 || balances {
                round_gain += phg.move_vertex(v, m.to, |_, _, _| {});
                moved += 1;
            }
        }
        improvement += round_gain;
        if moved == 0 || round_gain == 0 {
            break;
        }
    }
    improvement
}
