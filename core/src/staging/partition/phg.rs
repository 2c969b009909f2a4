//! A hypergraph together with a k-way partition and the bookkeeping every local search
//! needs: block weights, pin counts Φ(e, b) and a connectivity bitset per net (kept compact
//! in [`NetBlocks`]).
//!
//! The km1 gain of moving v from block s to t is w(e)·([Φ(e,s)=1] − [Φ(e,t)=0]) summed
//! over the nets of v; we compute it as benefit(v) − W(v) + affinity(v, t), where
//! benefit = Σ w(e)[Φ(e,s)=1], W = Σ w(e), affinity(t) = Σ w(e)[Φ(e,t)>0].

use crate::staging::hypergraph::{Hypergraph, NetId, VertexId};
use crate::staging::partition::net_blocks::NetBlocks;

/// Partition state over a borrowed hypergraph.
pub(crate) struct PartitionedHypergraph<'a> {
    pub(crate) hg: &'a Hypergraph,
    pub(crate) k: usize,
    parts: Vec<u32>,
    part_weights: Vec<i64>,
    blocks: NetBlocks,
}

/// Scratch space for gain computations: a sparse accumulator over blocks.
pub(crate) struct GainScratch {
    affinity: Vec<i64>,
    touched: Vec<u32>,
}

impl GainScratch {
    pub(crate) fn new(k: usize) -> Self {
        Self {
            affinity: vec![0; k],
            touched: Vec::with_capacity(k),
        }
    }
}

/// A candidate move with its exact km1 gain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Move {
    pub(crate) to: u32,
    pub(crate) gain: i64,
}

impl<'a> PartitionedHypergraph<'a> {
    pub(crate) fn new(hg: &'a Hypergraph, k: usize, parts: Vec<u32>) -> Self {
        let mut part_weights = vec![0; k];
        for (v, &b) in parts.iter().enumerate() {
            part_weights[b as usize] += hg.vertex_weight(v as VertexId);
        }
        Self {
            hg,
            k,
            part_weights,
            blocks: NetBlocks::new(hg, k, &parts),
            parts,
        }
    }

    pub(crate) fn part(&self, v: VertexId) -> u32 {
        self.parts[v as usize]
    }

    #[cfg(test)]
    pub(crate) fn parts(&self) -> &[u32] {
        &self.parts
    }

    pub(crate) fn into_parts(self) -> Vec<u32> {
        self.parts
    }

    pub(crate) fn part_weight(&self, b: u32) -> i64 {
        self.part_weights[b as usize]
    }

    pub(crate) fn part_weights(&self) -> &[i64] {
        &self.part_weights
    }

    #[inline]
    pub(crate) fn pin_count(&self, e: NetId, b: u32) -> u32 {
        self.blocks.count(e, b)
    }

    /// λ(e).
    #[inline]
    pub(crate) fn connectivity(&self, e: NetId) -> u32 {
        self.blocks.connectivity(e)
    }

    /// True if v is incident to a cut net.
    pub(crate) fn is_boundary(&self, v: VertexId) -> bool {
        self.hg
            .incident_nets(v)
            .iter()
            .any(|&e| self.connectivity(e) > 1)
    }

    /// Current km1 = Σ w(e)(λ(e) − 1).
    pub(crate) fn km1(&self) -> i64 {
        (0..self.hg.num_nets() as NetId)
            .map(|e| self.hg.net_weight(e) * (self.connectivity(e) as i64 - 1))
            .sum()
    }

    /// Moves v to block `to`; calls `on_net(e, Φ(e,from) after, Φ(e,to) after)` for every
    /// incident net and returns the km1 gain of the move.
    pub(crate) fn move_vertex(
        &mut self,
        v: VertexId,
        to: u32,
        mut on_net: impl FnMut(NetId, u32, u32),
    ) -> i64 {
        let from = self.parts[v as usize];
        debug_assert_ne!(from, to);
        let c = self.hg.vertex_weight(v);
        self.part_weights[from as usize] -= c;
        self.part_weights[to as usize] += c;
        self.parts[v as usize] = to;
        let mut gain = 0;
        for &e in self.hg.incident_nets(v) {
            let w = self.hg.net_weight(e);
            let pc_from = self.blocks.decrement(e, from);
            if pc_from == 0 {
                gain += w;
            }
            let pc_to = self.blocks.increment(e, to);
            if pc_to == 1 {
                gain -= w;
            }
            on_net(e, pc_from, pc_to);
        }
        gain
    }

    /// Fills `scratch` with the affinity of v to the blocks its nets touch (other than its
    /// own) and returns (benefit, W).
    fn affinities(&self, v: VertexId, scratch: &mut GainScratch) -> (i64, i64) {
        for &b in &scratch.touched {
            scratch.affinity[b as usize] = 0;
        }
        scratch.touched.clear();
        let from = self.parts[v as usize];
        let mut benefit = 0;
        let mut total = 0;
        if self.k <= 64 {
            // One connectivity word per net, no inner word loop.
            for &e in self.hg.incident_nets(v) {
                let w = self.hg.net_weight(e);
                total += w;
                let mut bits = self.blocks.bits(e)[0];
                if self.pin_count(e, from) == 1 {
                    benefit += w;
                }
                bits &= !(1u64 << from);
                while bits != 0 {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if scratch.affinity[b] == 0 {
                        scratch.touched.push(b as u32);
                    }
                    scratch.affinity[b] += w;
                }
            }
            return (benefit, total);
        }
        for &e in self.hg.incident_nets(v) {
            let w = self.hg.net_weight(e);
            total += w;
            if self.pin_count(e, from) == 1 {
                benefit += w;
            }
            for (word, &bits) in self.blocks.bits(e).iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let b = (word * 64) as u32 + bits.trailing_zeros();
                    bits &= bits - 1;
                    if b == from {
                        continue;
                    }
                    if scratch.affinity[b as usize] == 0 {
                        scratch.touched.push(b);
                    }
                    scratch.affinity[b as usize] += w;
                }
            }
        }
        (benefit, total)
    }

    /// The best km1 move of v to an *adjacent* block that stays within `max_weights`.
    /// Ties go to the block with the most room left, then the lower id.
    pub(crate) fn best_adjacent_move(
        &self,
        v: VertexId,
        max_weights: &[i64],
        scratch: &mut GainScratch,
    ) -> Option<Move> {
        let (benefit, total) = self.affinities(v, scratch);
        let c = self.hg.vertex_weight(v);
        let mut best: Option<(i64, i64, u32)> = None;
        for &b in &scratch.touched {
            let room = max_weights[b as usize] - self.part_weights[b as usize] - c;
            if room < 0 {
                continue;
            }
            let gain = benefit - total + scratch.affinity[b as usize];
            let key = (gain, room, u32::MAX - b);
            if best.is_none_or(|bk| key > (bk.0, bk.1, u32::MAX - bk.2)) {
                best = Some((gain, room, b));
            }
        }
        best.map(|(gain, _, to)| Move { to, gain })
    }

    /// The best km1 move of v to *any* other block that stays within `max_weights` (used by
    /// the rebalancer, which may have to leave the neighbourhood).
    pub(crate) fn best_any_move(
        &self,
        v: VertexId,
        max_weights: &[i64],
        scratch: &mut GainScratch,
    ) -> Option<Move> {
        let (benefit, total) = self.affinities(v, scratch);
        let c = self.hg.vertex_weight(v);
        let from = self.parts[v as usize];
        let mut best: Option<(i64, i64, u32)> = None;
        for b in 0..self.k as u32 {
            if b == from {
                continue;
            }
            let room = max_weights[b as usize] - self.part_weights[b as usize] - c;
            if room < 0 {
                continue;
            }
            let gain = benefit - total + scratch.affinity[b as usize];
            let key = (gain, room, u32::MAX - b);
            if best.is_none_or(|bk| key > (bk.0, bk.1, u32::MAX - bk.2)) {
                best = Some((gain, room, b));
            }
        }
        best.map(|(gain, _, to)| Move { to, gain })
    }

    /// The km1 gain of moving v to block `to` (which may be non-adjacent).
    pub(crate) fn gain_to(&self, v: VertexId, to: u32) -> i64 {
        let from = self.parts[v as usize];
        let mut gain = 0;
        for &e in self.hg.incident_nets(v) {
            let w = self.hg.net_weight(e);
            if self.pin_count(e, from) == 1 {
                gain += w;
            }
            if self.pin_count(e, to) == 0 {
                gain -= w;
            }
        }
        gain
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::metrics;

    #[test]
    fn move_gains_match_recomputed_km1() {
        let hg = Hypergraph::new(
            vec![1, 2, 1, 1, 3],
            vec![3, 2, 5, 1],
            vec![vec![0, 1, 2], vec![2, 3], vec![0, 3, 4], vec![1, 4]],
        )
        .unwrap();
        let mut phg = PartitionedHypergraph::new(&hg, 3, vec![0, 1, 2, 2, 0]);
        let mut scratch = GainScratch::new(3);
        let big = [100; 3];
        for (v, to) in [(0u32, 1u32), (4, 2), (1, 2), (3, 0), (2, 0)] {
            let before = phg.km1();
            assert_eq!(before, metrics::km1(&hg, phg.parts()));
            let predicted = phg.gain_to(v, to);
            if let Some(m) = phg.best_any_move(v, &big, &mut scratch) {
                assert_eq!(m.gain, phg.gain_to(v, m.to));
            }
            let gain = phg.move_vertex(v, to, |_, _, _| {});
            assert_eq!(gain, predicted);
            assert_eq!(phg.km1(), before - gain);
        }
        assert_eq!(phg.part_weights().iter().sum::<i64>(), 8);
    }
}
