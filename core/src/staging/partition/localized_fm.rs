//! Localized k-way FM (Mt-KaHyPar's refinement at every level, partitioning.md item 11):
//! instead of one global pass whose priority queue holds every boundary vertex, many small
//! searches each start from a few boundary seeds, grow along the neighbours of the vertices
//! they move, stop after `max_fruitless_moves` moves without a new best prefix, and roll
//! back to their own best prefix. A global pass on a large level spends its fruitless
//! budget on scattered zero-gain moves all over the boundary and stops; local searches
//! climb out of a local optimum in one region at a time, so every region of the boundary
//! gets its own budget. Each vertex is moved at most once per round, which bounds a
//! round's work by the boundary's neighbourhood.
//!
//! Moves stay within the maximum block weights (the rebalancer runs before). Gains are
//! exact: a popped entry is recomputed and re-inserted when stale. Deterministic: seeds
//! are visited in a seeded random order.
//!
//! Levels with at least [`LANES_MIN_VERTICES`] vertices run their searches in two lanes
//! side by side ([`lanes`]), merged in a fixed order, so the result depends on the seed
//! only, not on the thread count; smaller levels run the searches one after the other.

mod lanes;

use std::collections::BinaryHeap;

use rand::seq::SliceRandom;
use rand::Rng;

use crate::staging::hypergraph::{NetId, VertexId};
use crate::staging::partition::fm::popped_is_current;
use crate::staging::partition::phg::{GainScratch, Move, PartitionedHypergraph};

/// Nets larger than this are not followed when a search expands.
const LARGE_NET: usize = 1000;
/// Levels with at least this many vertices run their searches in lanes ([`lanes`]).
const LANES_MIN_VERTICES: usize = 4096;

/// Knobs of localized FM.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalizedFmSettings {
    /// Maximum number of rounds over the boundary.
    pub(crate) rounds: usize,
    /// Boundary vertices that seed one search.
    pub(crate) seeds_per_search: usize,
    /// A search stops after this many moves without a new best prefix.
    pub(crate) max_fruitless_moves: usize,
    /// Rounds stop once a round improves km1 by less than this fraction.
    pub(crate) min_relative_improvement: f64,
}

/// Runs localized FM rounds; returns the total km1 improvement.
pub(crate) fn localized_fm(
    phg: &mut PartitionedHypergraph<'_>,
    max_weights: &[i64],
    config: LocalizedFmSettings,
    rng: &mut impl Rng,
) -> i64 {
    let n = phg.hg.num_vertices();
    if n >= LANES_MIN_VERTICES {
        return lanes::localized_fm_in_lanes(phg, max_weights, config, rng);
    }
    let mut search = Search::new(n, phg.k);
    let mut total = 0;
    let mut km1 = phg.km1();
    for _ in 0..config.rounds {
        let boundary = shuffled_boundary(phg, rng);
        search.touched.iter_mut().for_each(|t| *t = false);
        search.newly_touched.clear();
        let mut round = 0;
        let mut cursor = 0;
        while cursor < boundary.len() {
            let seeds = next_seeds(&boundary, &mut cursor, &search.touched, config);
            round += search.run(phg, max_weights, &seeds, config.max_fruitless_moves, None);
        }
        total += round;
        if round_is_last(round, km1, config) {
            break;
        }
        km1 -= round;
    }
    total
}

/// The boundary vertices in a seeded random order.
pub(super) fn shuffled_boundary(
    phg: &PartitionedHypergraph<'_>,
    rng: &mut impl Rng,
) -> Vec<VertexId> {
    let n = phg.hg.num_vertices();
    let mut boundary: Vec<VertexId> = (0..n as VertexId).filter(|&v| phg.is_boundary(v)).collect();
    boundary.shuffle(rng);
    boundary
}

/// The next `seeds_per_search` boundary vertices from `cursor` not yet touched this round.
pub(super) fn next_seeds(
    boundary: &[VertexId],
    cursor: &mut usize,
    touched: &[bool],
    config: LocalizedFmSettings,
) -> Vec<VertexId> {
    let mut seeds = Vec::with_capacity(config.seeds_per_search);
    while *cursor < boundary.len() && seeds.len() < config.seeds_per_search {
        let v = boundary[*cursor];
        *cursor += 1;
        if !touched[v as usize] {
            seeds.push(v);
        }
    }
    seeds
}

/// True if a round that improved km1 (before it: `km1`) by `round` ends the rounds.
pub(super) fn round_is_last(round: i64, km1: i64, config: LocalizedFmSettings) -> bool {
    round <= 0 || (round as f64) < config.min_relative_improvement * km1 as f64
}

/// State of the local searches of one round.
pub(super) struct Search {
    /// Moved (or tried) in this round: never moved again in the same round.
    pub(super) touched: Vec<bool>,
    /// Vertices moved (kept or rolled back) since the caller last cleared this list.
    pub(super) newly_touched: Vec<VertexId>,
    /// The move each vertex is queued with in the current search.
    queued: Vec<Option<Move>>,
    in_search: Vec<VertexId>,
    scratch: GainScratch,
    expand: Vec<VertexId>,
}

impl Search {
    pub(super) fn new(n: usize, k: usize) -> Self {
        Self {
            touched: vec![false; n],
            newly_touched: Vec::new(),
            queued: vec![None; n],
            in_search: Vec::new(),
            scratch: GainScratch::new(k),
            expand: Vec::new(),
        }
    }

    fn enqueue(
        &mut self,
        heap: &mut BinaryHeap<(i64, u32, u32)>,
        phg: &PartitionedHypergraph<'_>,
        max_weights: &[i64],
        v: VertexId,
    ) {
        let was = self.queued[v as usize];
        let m = phg.best_adjacent_move(v, max_weights, &mut self.scratch);
        if was.is_none() {
            self.in_search.push(v);
        }
        self.queued[v as usize] = m;
        if let Some(m) = m {
            if was != Some(m) {
                heap.push((m.gain, u32::MAX - v, m.to));
            }
        }
    }

    /// One local search from `seeds`; returns the km1 improvement it keeps. The moves it
    /// keeps are appended to `kept` as (vertex, from, to) if given.
    pub(super) fn run(
        &mut self,
        phg: &mut PartitionedHypergraph<'_>,
        max_weights: &[i64],
        seeds: &[VertexId],
        max_fruitless: usize,
        kept: Option<&mut Vec<(VertexId, u32, u32)>>,
    ) -> i64 {
        let mut heap = BinaryHeap::new();
        for &v in seeds {
            self.enqueue(&mut heap, phg, max_weights, v);
        }
        let mut moves: Vec<(VertexId, u32)> = Vec::new();
        let (mut cumulative, mut best, mut best_len, mut fruitless) = (0i64, 0i64, 0usize, 0);
        while let Some((gain, rv, to)) = heap.pop() {
            let v = u32::MAX - rv;
            if self.touched[v as usize] || self.queued[v as usize] != Some(Move { to, gain }) {
                continue;
            }
            let current = phg.best_adjacent_move(v, max_weights, &mut self.scratch);
            if !popped_is_current(
                &mut self.queued[v as usize],
                &mut heap,
                rv,
                Move { to, gain },
                current,
            ) {
                continue;
            }
            let from = phg.part(v);
            self.touched[v as usize] = true;
            self.newly_touched.push(v);
            let hg = phg.hg;
            let expand = &mut self.expand;
            cumulative += phg.move_vertex(v, to, |e: NetId, pc_from, pc_to| {
                if (pc_from <= 1 || pc_to <= 2) && hg.net_size(e) <= LARGE_NET {
                    expand.extend_from_slice(hg.pins(e));
                }
            });
            moves.push((v, from));
            if cumulative > best {
                best = cumulative;
                best_len = moves.len();
                fruitless = 0;
            } else {
                fruitless += 1;
                if fruitless > max_fruitless {
                    self.expand.clear();
                    break;
                }
            }
            // Neighbours sharing several changed nets with v are rated once per move.
            let mut expand = std::mem::take(&mut self.expand);
            expand.sort_unstable();
            expand.dedup();
            for &u in &expand {
                if !self.touched[u as usize] {
                    self.enqueue(&mut heap, phg, max_weights, u);
                }
            }
            self.expand = expand;
            self.expand.clear();
        }
        for &(v, from) in moves[best_len..].iter().rev() {
            phg.move_vertex(v, from, |_, _, _| {});
        }
        if let Some(kept) = kept {
            kept.extend(
                moves[..best_len]
                    .iter()
                    .map(|&(v, from)| (v, from, phg.part(v))),
            );
        }
        for &v in &self.in_search {
            self.queued[v as usize] = None;
        }
        self.in_search.clear();
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::hypergraph::Hypergraph;
    use crate::staging::metrics;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// x and y (block 0) are tied to each other (weight 5) and each to block 1 (weight 3).
    /// Moving one alone loses 2, so label propagation stays; a local search takes the
    /// loss and then gains 8 with the other one.
    #[test]
    fn climbs_out_of_a_local_optimum() {
        let (x, y, p, q, r, s, t) = (0u32, 1, 2, 3, 4, 5, 6);
        let hg = Hypergraph::new(
            vec![1; 7],
            vec![5, 3, 3, 10, 10, 1],
            vec![
                vec![x, y],
                vec![x, p],
                vec![y, q],
                vec![p, r],
                vec![q, r],
                vec![s, t],
            ],
        )
        .unwrap();
        let mut phg = PartitionedHypergraph::new(&hg, 2, vec![0, 0, 1, 1, 1, 0, 0]);
        let before = phg.km1();
        let max = [10, 10];
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        assert_eq!(
            crate::staging::partition::label_propagation::label_propagation(
                &mut phg, &max, 3, &mut rng
            ),
            0
        );
        let config = LocalizedFmSettings {
            rounds: 5,
            seeds_per_search: 4,
            max_fruitless_moves: 5,
            min_relative_improvement: 0.0,
        };
        let gain = localized_fm(&mut phg, &max, config, &mut rng);
        assert_eq!(phg.km1(), before - gain);
        assert_eq!(phg.km1(), metrics::km1(&hg, phg.parts()));
        assert_eq!((before, phg.km1()), (6, 0));
        assert_eq!(phg.parts(), &[1, 1, 1, 1, 1, 0, 0]);
    }
}
