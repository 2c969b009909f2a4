//! 2-way FM with a gain cache: the same passes, moves and rollback as [`super::fm`]'s
//! k-way pass (so the same partitions, move for move), but the gain of every vertex is
//! kept exact by delta updates instead of being recomputed from all its nets.
//!
//! In a bisection a vertex has one candidate move (to the other block), whose km1 gain is
//! Σ w(e)([Φ(e,own)=1] − [Φ(e,other)=0]). A move of v from s to t changes that sum only
//! for the pins of nets whose Φ(e,t) rose to 1 or 2 or whose Φ(e,s) fell to 0 or 1 (the
//! km1 delta rule), and those are the nets whose pins the k-way pass rescans anyway, so
//! updating the cache costs O(1) per pin there. The k-way pass recomputed every dirty
//! neighbour's gain from all its nets (O(degree) each), which on the dense coarsest level
//! of a bisection was 40 % of the whole partitioner's CPU time on SAT 20k, k = 16.
//!
//! Alongside the gain the cache counts, per vertex, its nets without a pin in the other
//! block: the vertex is a boundary vertex (and its move "adjacent") iff that count is
//! below its degree.

use std::collections::BinaryHeap;

use crate::staging::hypergraph::{NetId, VertexId};
use crate::staging::partition::fm::{
    max_overload, popped_is_current, BestPrefix, FmSettings, LARGE_NET,
};
use crate::staging::partition::phg::{Move, PartitionedHypergraph};

/// Runs 2-way FM passes (`phg.k` must be 2); returns the total km1 improvement.
pub(crate) fn fm_refine_two_way(
    phg: &mut PartitionedHypergraph<'_>,
    max_weights: &[i64],
    config: FmSettings,
) -> i64 {
    debug_assert_eq!(phg.k, 2);
    let mut state = TwoWay::new(phg);
    let mut total = 0;
    let mut km1 = phg.km1();
    for _ in 0..config.passes {
        let gain = state.pass(
            phg,
            max_weights,
            config.max_fruitless_moves,
            config.allowance,
        );
        total += gain;
        if gain <= 0 || (gain as f64) < config.min_relative_improvement * km1 as f64 {
            break;
        }
        km1 -= gain;
    }
    total
}

struct TwoWay {
    /// km1 gain of moving each vertex to the other block.
    gain: Vec<i64>,
    /// Per vertex: incident nets with no pin in the other block.
    unconnected: Vec<u32>,
    /// True after a rollback: the cache is recomputed before the next pass. Rolling back
    /// with delta updates would rescan the changed nets' pins of every undone move; one
    /// recomputation reads each pin's counts once.
    stale: bool,
    locked: Vec<bool>,
    /// The move each vertex is queued with (stale heap entries are skipped).
    queued: Vec<Option<Move>>,
    dirty: Vec<bool>,
    dirty_list: Vec<VertexId>,
    /// Nets whose pin counts crossed a threshold in the last move: (net, Φ(e,from),
    /// Φ(e,to)) after it.
    changed: Vec<(NetId, u32, u32)>,
    /// The maximum weights plus the allowance, for the moves of the current pass.
    relaxed: [i64; 2],
}

impl TwoWay {
    fn new(phg: &PartitionedHypergraph<'_>) -> Self {
        let n = phg.hg.num_vertices();
        let mut state = Self {
            gain: vec![0; n],
            unconnected: vec![0; n],
            stale: true,
            locked: vec![false; n],
            queued: vec![None; n],
            dirty: vec![false; n],
            dirty_list: Vec::new(),
            changed: Vec::new(),
            relaxed: [0; 2],
        };
        state.refresh(phg);
        state
    }

    /// Recomputes the gain cache from the pin counts if it is stale.
    fn refresh(&mut self, phg: &PartitionedHypergraph<'_>) {
        if !self.stale {
            return;
        }
        let hg = phg.hg;
        for v in 0..hg.num_vertices() as VertexId {
            let own = phg.part(v);
            let (mut gain, mut unconnected) = (0, 0);
            for &e in hg.incident_nets(v) {
                let w = hg.net_weight(e);
                if phg.pin_count(e, own) == 1 {
                    gain += w;
                }
                if phg.pin_count(e, 1 - own) == 0 {
                    gain -= w;
                    unconnected += 1;
                }
            }
            self.gain[v as usize] = gain;
            self.unconnected[v as usize] = unconnected;
        }
        self.stale = false;
    }

    /// The move of v to the other block if v is on the boundary and the move fits the
    /// relaxed weights (what `best_adjacent_move` returns for k = 2).
    fn best(&self, phg: &PartitionedHypergraph<'_>, v: VertexId) -> Option<Move> {
        let degree = phg.hg.incident_nets(v).len();
        if self.unconnected[v as usize] as usize >= degree {
            return None;
        }
        let to = 1 - phg.part(v);
        let room = self.relaxed[to as usize] - phg.part_weight(to) - phg.hg.vertex_weight(v);
        (room >= 0).then_some(Move {
            to,
            gain: self.gain[v as usize],
        })
    }

    fn enqueue(
        &mut self,
        heap: &mut BinaryHeap<(i64, u32, u32)>,
        phg: &PartitionedHypergraph<'_>,
        v: VertexId,
    ) {
        let m = self.best(phg, v);
        let was = std::mem::replace(&mut self.queued[v as usize], m);
        // An unlocked vertex queued with `was` has exactly that entry in the heap, and a
        // second identical entry would pop as the same move.
        if let Some(m) = m {
            if was != Some(m) {
                heap.push((m.gain, u32::MAX - v, m.to));
            }
        }
    }

    /// Moves v to `to`, keeps the gain cache exact and marks the unlocked pins of the
    /// changed nets (up to `LARGE_NET` pins) dirty. Returns the move's km1 gain.
    fn apply(&mut self, phg: &mut PartitionedHypergraph<'_>, v: VertexId, to: u32) -> i64 {
        let hg = phg.hg;
        let changed = &mut self.changed;
        let mut v_unconnected = 0;
        let real = phg.move_vertex(v, to, |e: NetId, pc_from, pc_to| {
            if pc_from == 0 {
                v_unconnected += 1;
            }
            if pc_from <= 1 || pc_to <= 2 {
                changed.push((e, pc_from, pc_to));
            }
        });
        // Moving back would undo exactly this move.
        self.gain[v as usize] = -real;
        self.unconnected[v as usize] = v_unconnected;
        let changed = std::mem::take(&mut self.changed);
        for &(e, pc_from, pc_to) in &changed {
            let w = hg.net_weight(e);
            // Pins left in the source block: e now reaches the target block (no penalty
            // any more) and maybe they are its last pin there (a benefit).
            let from_delta = w * (i64::from(pc_to == 1) + i64::from(pc_from == 1));
            let from_connect = u32::from(pc_to == 1);
            // Pins in the target block: their lone-pin benefit ended, and maybe e left the
            // source block (a penalty for moving there).
            let to_delta = -w * (i64::from(pc_to == 2) + i64::from(pc_from == 0));
            let to_disconnect = u32::from(pc_from == 0);
            let mark = hg.net_size(e) <= LARGE_NET;
            for &u in hg.pins(e) {
                if u == v {
                    continue;
                }
                let ui = u as usize;
                if phg.part(u) == to {
                    self.gain[ui] += to_delta;
                    self.unconnected[ui] += to_disconnect;
                } else {
                    self.gain[ui] += from_delta;
                    self.unconnected[ui] -= from_connect;
                }
                if mark && !self.locked[ui] && !self.dirty[ui] {
                    self.dirty[ui] = true;
                    self.dirty_list.push(u);
                }
            }
        }
        self.changed = changed;
        self.changed.clear();
        real
    }

    /// One FM pass; returns the km1 improvement kept after rollback.
    fn pass(
        &mut self,
        phg: &mut PartitionedHypergraph<'_>,
        max_weights: &[i64],
        max_fruitless: usize,
        allowance: i64,
    ) -> i64 {
        let n = phg.hg.num_vertices();
        self.refresh(phg);
        self.relaxed = [max_weights[0] + allowance, max_weights[1] + allowance];
        self.locked.iter_mut().for_each(|l| *l = false);
        self.queued.iter_mut().for_each(|q| *q = None);
        let mut heap = BinaryHeap::new();
        for v in 0..n as VertexId {
            self.enqueue(&mut heap, phg, v);
        }
        let mut moves: Vec<(VertexId, u32)> = Vec::new();
        let mut cumulative = 0i64;
        let mut best = BestPrefix::new(max_overload(phg, max_weights), max_fruitless);
        while let Some((gain, rv, to)) = heap.pop() {
            let v = u32::MAX - rv;
            if self.locked[v as usize] || self.queued[v as usize] != Some(Move { to, gain }) {
                continue;
            }
            // Lazy check: the room may have changed since v was queued.
            let current = self.best(phg, v);
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
            self.locked[v as usize] = true;
            let real = self.apply(phg, v, to);
            debug_assert_eq!(real, gain);
            moves.push((v, from));
            cumulative += real;
            if !best.record(cumulative, max_overload(phg, max_weights), moves.len()) {
                break;
            }
            let dirty_now = std::mem::take(&mut self.dirty_list);
            for &u in &dirty_now {
                self.dirty[u as usize] = false;
                self.enqueue(&mut heap, phg, u);
            }
            self.dirty_list = dirty_now;
            self.dirty_list.clear();
        }
        // Like the k-way pass, vertices still marked dirty after a break are re-rated after
        // the next pass's first move.
        for &(v, from) in moves[best.len..].iter().rev() {
            phg.move_vertex(v, from, |_, _, _| {});
            self.stale = true;
        }
        best.gain
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::hypergraph::Hypergraph;
    use crate::staging::partition::fm::fm_refine_k_way;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_instance(n: usize, nets: usize, seed: u64) -> (Hypergraph, Vec<u32>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let pins: Vec<Vec<u32>> = (0..nets)
            .map(|_| {
                let size = rng.random_range(1..7);
                (0..size).map(|_| rng.random_range(0..n) as u32).collect()
            })
            .collect();
        let weights = (0..n).map(|_| rng.random_range(1..3)).collect();
        let net_weights = (0..nets).map(|_| rng.random_range(1..5)).collect();
        let parts = (0..n).map(|_| rng.random_range(0..2)).collect();
        (Hypergraph::new(weights, net_weights, pins).unwrap(), parts)
    }

    #[test]
    fn cache_stays_exact_and_moves_match_the_k_way_pass() {
        for seed in 0..20 {
            let (hg, parts) = random_instance(120, 260, seed);
            let max = [hg.total_weight() / 2 + 3, hg.total_weight() / 2 + 3];
            let config = FmSettings {
                passes: 4,
                max_fruitless_moves: 30,
                min_relative_improvement: 0.0,
                allowance: 2,
            };
            let mut cached = PartitionedHypergraph::new(&hg, 2, parts.clone());
            let gain = fm_refine_two_way(&mut cached, &max, config);
            let mut plain = PartitionedHypergraph::new(&hg, 2, parts);
            assert_eq!(
                gain,
                fm_refine_k_way(&mut plain, &max, config),
                "seed {seed}"
            );
            assert_eq!(cached.parts(), plain.parts(), "seed {seed}");
            // Delta updates keep the cache equal to a fresh one.
            let mut state = TwoWay::new(&cached);
            for step in 0..60u32 {
                let v = (step * 7 + seed as u32) % 120;
                let to = 1 - cached.part(v);
                state.apply(&mut cached, v, to);
                let fresh = TwoWay::new(&cached);
                assert_eq!(state.gain, fresh.gain, "seed {seed}");
                assert_eq!(state.unconnected, fresh.unconnected, "seed {seed}");
            }
        }
    }
}
