//! A hypergraph together with a k-way partition and the bookkeeping every local search
//! needs: block weights, pin counts Φ(e, b) and a connectivity bitset per net.
//!
//! The km1 gain of moving v from block s to t is w(e)·([Φ(e,s)=1] − [Φ(e,t)=0]) summed
//! over the nets of v; we compute it as benefit(v) − W(v) + affinity(v, t), where
//! benefit = Σ w(e)[Φ(e,s)=1], W = Σ w(e), affinity(t) = Σ w(e)[Φ(e,t)>0].

use rayon::prelude::*;

use crate::staging::hypergraph::{Hypergraph, NetId, VertexId};

/// Partition state over a borrowed hypergraph.
pub(crate) struct PartitionedHypergraph<'a> {
    pub(crate) hg: &'a Hypergraph,
    pub(crate) k: usize,
    parts: Vec<u32>,
    part_weights: Vec<i64>,
    pin_counts: Vec<u32>,
    words: usize,
    connectivity: Vec<u64>,
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
        let words = k.div_ceil(64);
        let mut phg = Self {
            hg,
            k,
            part_weights: vec![0; k],
            pin_counts: vec![0; hg.num_nets() * k],
            words,
            connectivity: vec![0; hg.num_nets() * words],
            parts,
        };
        for v in 0..hg.num_vertices() {
            phg.part_weights[phg.parts[v] as usize] += hg.vertex_weight(v as VertexId);
        }
        // Every net owns its own slices of the counts and bits: fill them in parallel.
        let parts = &phg.parts;
        phg.pin_counts
            .par_chunks_mut(k.max(1))
            .zip(phg.connectivity.par_chunks_mut(words.max(1)))
            .with_min_len(4096)
            .enumerate()
            .for_each(|(e, (counts, bits))| {
                for &p in hg.pins(e as NetId) {
                    let b = parts[p as usize] as usize;
                    counts[b] += 1;
                    bits[b / 64] |= 1 << (b % 64);
                }
            });
        phg
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

    pub(crate) fn pin_count(&self, e: NetId, b: u32) -> u32 {
        self.pin_counts[e as usize * self.k + b as usize]
    }

    /// λ(e).
    pub(crate) fn connectivity(&self, e: NetId) -> u32 {
        self.connectivity[e as usize * self.words..(e as usize + 1) * self.words]
            .iter()
            .map(|w| w.count_ones())
            .sum()
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
            let base = e as usize * self.k;
            let w = self.hg.net_weight(e);
            self.pin_counts[base + from as usize] -= 1;
            let pc_from = self.pin_counts[base + from as usize];
            if pc_from == 0 {
                gain += w;
                self.connectivity[e as usize * self.words + from as usize / 64] &=
                    !(1 << (from % 64));
            }
            self.pin_counts[base + to as usize] += 1;
            let pc_to = self.pin_counts[base + to as usize];
            if pc_to == 1 {
                gain -= w;
                self.connectivity[e as usize * self.words + to as usize / 64] |= 1 << (to % 64);
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
        if self.words == 1 {
            // k ≤ 64: one connectivity word per net, no inner word loop.
            for &e in self.hg.incident_nets(v) {
                let w = self.hg.net_weight(e);
                total += w;
                let mut bits = self.connectivity[e as usize];
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
            let base = e as usize * self.words;
            for word in 0..self.words {
                let mut bits = self.connectivity[base + word];
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
