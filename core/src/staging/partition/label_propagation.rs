//! Size-constrained label propagation: every boundary vertex, in a seeded random order,
//! moves to the adjacent block with the best positive km1 gain (or a zero-gain move that
//! improves balance). Cheap, and it repairs most of the error left by projecting a coarse
//! partition onto a finer level (partitioning.md item 10).
//!
//! Parallel and deterministic (Mt-KaHyPar's deterministic mode does the same): the order is
//! cut into sub-rounds; within one, every vertex's best move is computed in parallel against
//! the partition as it was at the start of the sub-round, then the candidates are applied
//! one by one in order, each re-checked against the current partition (exact gain, room in
//! the target). The result depends on the seed only, not on the number of threads.

use rand::seq::SliceRandom;
use rand::Rng;
use rayon::prelude::*;

use crate::staging::hypergraph::VertexId;
use crate::staging::partition::phg::{GainScratch, Move, PartitionedHypergraph};

/// Vertices per sub-round (small enough that few candidates go stale).
const SUB_ROUND: usize = 4096;
/// Nets larger than this do not wake their pins up for the next round.
const LARGE_NET: usize = 1000;

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
    let k = phg.k;
    let mut scratch = GainScratch::new(k);
    let mut improvement = 0;
    // After the first round only the neighbours of moved vertices can have a new move.
    let mut active = vec![true; n];
    let mut next_active = vec![false; n];
    for _ in 0..rounds {
        let mut round_gain = 0;
        let mut moved = 0usize;
        let current: Vec<VertexId> = order
            .iter()
            .copied()
            .filter(|&v| active[v as usize])
            .collect();
        for chunk in current.chunks(SUB_ROUND) {
            let view = &*phg;
            let candidates: Vec<(VertexId, Move)> = chunk
                .par_iter()
                .with_min_len(256)
                .map_init(
                    || GainScratch::new(k),
                    |scratch, &v| {
                        let m = wanted_move(view, v, max_weights, scratch)?;
                        Some((v, m))
                    },
                )
                .flatten_iter()
                .collect();
            for (v, _) in candidates {
                // Re-check against the partition as it is now.
                if let Some(m) = wanted_move(phg, v, max_weights, &mut scratch) {
                    let hg = phg.hg;
                    round_gain += phg.move_vertex(v, m.to, |e, _, _| {
                        if hg.net_size(e) <= LARGE_NET {
                            for &u in hg.pins(e) {
                                next_active[u as usize] = true;
                            }
                        }
                    });
                    moved += 1;
                }
            }
        }
        std::mem::swap(&mut active, &mut next_active);
        next_active.iter_mut().for_each(|a| *a = false);
        improvement += round_gain;
        if moved == 0 || round_gain == 0 {
            break;
        }
    }
    improvement
}

/// v's best adjacent move if it gains km1, or keeps km1 and improves balance.
fn wanted_move(
    phg: &PartitionedHypergraph<'_>,
    v: VertexId,
    max_weights: &[i64],
    scratch: &mut GainScratch,
) -> Option<Move> {
    if !phg.is_boundary(v) {
        return None;
    }
    let m = phg.best_adjacent_move(v, max_weights, scratch)?;
    let c = phg.hg.vertex_weight(v);
    let balances = m.gain == 0 && phg.part_weight(m.to) + c < phg.part_weight(phg.part(v));
    (m.gain > 0 || balances).then_some(m)
}
