//! The blocks each net touches: its connectivity bitset and its pin counts Φ(e, b), stored
//! compactly.
//!
//! A dense table of k counts per net costs nets · k · 4 bytes: 2.3 GB for the 9 M nets of
//! a 2M-task batch at k = 64, and the localized FM lanes hold two such partitions at once.
//! But a net touches at most min(|e|, k) blocks, and most nets are small (6–7 pins on the
//! held-out batches). So each net gets min(|e|, k) count slots, and holds the counts of
//! the blocks it touches in block order: the count of block b sits at the rank of b among
//! the net's connectivity bits. A block that gains its first pin is inserted at its rank
//! (the higher ones shift up one slot); a block that loses its last pin is removed. Memory
//! is at most pins · 4 bytes plus 8 bytes a net, and the counts are the same as the dense
//! table's, so every gain (and every partition) is unchanged.
//!
//! A net's bits and the start of its slots sit side by side in one header (16 bytes for
//! k ≤ 64, one cache line), so reading Φ(e, b) costs two memory accesses as the dense
//! table's bits-then-count did, not three.
//!
//! The ranks and shifts still cost CPU (+40 % on 20k-task batches, where the dense table
//! fits in cache; +12 % at 2M, K = 64), so the compact layout is used only when the dense
//! table would exceed [`DENSE_MAX_BYTES`]; below that each net has k slots indexed by
//! block, as before.

use rayon::prelude::*;

use crate::staging::hypergraph::{Hypergraph, NetId};

/// Nets per parallel work item when the counts are first filled.
const FILL_CHUNK: usize = 4096;
/// The largest dense table (nets · k counts of 4 bytes) kept dense: 256 MiB. The 200k-task
/// batches' tables (≤ 900k nets at k = 64: 230 MB) stay dense; the 2M-task ones
/// (6–9 M nets: 1.6–2.3 GB at k = 64, 0.4–0.6 GB at k = 16) are compact.
const DENSE_MAX_BYTES: usize = 256 << 20;

/// Connectivity bits and compact pin counts of every net of one partition.
pub(crate) struct NetBlocks {
    /// Words of the connectivity bitset per net: ⌈k / 64⌉.
    words: usize,
    /// Words of a net's header: its bits, then (compact only) its first slot.
    stride: usize,
    /// Blocks (k).
    k: usize,
    /// Compact slots (counts of a net's blocks in block order) or k slots a net.
    compact: bool,
    /// Per net, `stride` words: its connectivity bits, then (compact) the index of its
    /// first count slot in `counts`. Compact: net e has min(|e|, k) slots, the first λ(e) of
    /// them hold the counts of its blocks in block order. Dense: k slots, by block.
    heads: Vec<u64>,
    counts: Vec<u32>,
}

impl NetBlocks {
    /// The counts of `hg`'s nets under `parts` (block of every vertex, all < k); compact
    /// if the dense table would exceed [`DENSE_MAX_BYTES`].
    pub(crate) fn new(hg: &Hypergraph, k: usize, parts: &[u32]) -> Self {
        let compact = hg.num_nets().saturating_mul(k).saturating_mul(4) > DENSE_MAX_BYTES;
        Self::with_layout(hg, k, parts, compact)
    }

    fn with_layout(hg: &Hypergraph, k: usize, parts: &[u32], compact: bool) -> Self {
        let words = k.div_ceil(64).max(1);
        let stride = words + usize::from(compact);
        let nets = hg.num_nets();
        let slots = |e: usize| {
            if compact {
                hg.pins(e as NetId).len().min(k)
            } else {
                k
            }
        };
        let mut heads = vec![0u64; nets * stride];
        let mut end = 0;
        for (e, head) in heads.chunks_exact_mut(stride).enumerate() {
            if compact {
                head[words] = end as u64;
            }
            end += slots(e);
        }
        let mut counts = vec![0u32; end];
        // Every net owns its header and slots: fill chunks of nets in parallel.
        let mut pieces = Vec::with_capacity(nets.div_ceil(FILL_CHUNK));
        let (mut heads_rest, mut counts_rest) = (heads.as_mut_slice(), counts.as_mut_slice());
        for first in (0..nets).step_by(FILL_CHUNK) {
            let last = (first + FILL_CHUNK).min(nets);
            let (h, rest) = heads_rest.split_at_mut((last - first) * stride);
            heads_rest = rest;
            let len = (first..last).map(slots).sum();
            let (c, rest) = counts_rest.split_at_mut(len);
            counts_rest = rest;
            pieces.push((first, h, c));
        }
        pieces.into_par_iter().for_each(|(first, h, mut c)| {
            for (i, head) in h.chunks_exact_mut(stride).enumerate() {
                let pins = hg.pins((first + i) as NetId);
                for &p in pins {
                    let block = parts[p as usize] as usize;
                    head[block / 64] |= 1 << (block % 64);
                }
                let (own, rest) = std::mem::take(&mut c).split_at_mut(slots(first + i));
                c = rest;
                for &p in pins {
                    let b = parts[p as usize];
                    own[if compact {
                        rank(&head[..words], b)
                    } else {
                        b as usize
                    }] += 1;
                }
            }
        });
        Self {
            words,
            stride,
            k,
            compact,
            heads,
            counts,
        }
    }

    /// Net e's connectivity bitset (bit b set iff Φ(e, b) > 0).
    #[inline]
    pub(crate) fn bits(&self, e: NetId) -> &[u64] {
        let at = e as usize * self.stride;
        &self.heads[at..at + self.words]
    }

    /// Compact layout: the index in `counts` of net e's first slot.
    #[inline]
    fn first_slot(&self, e: NetId) -> usize {
        self.heads[e as usize * self.stride + self.words] as usize
    }

    /// λ(e): the number of blocks net e touches.
    #[inline]
    pub(crate) fn connectivity(&self, e: NetId) -> u32 {
        self.bits(e).iter().map(|w| w.count_ones()).sum()
    }

    /// Φ(e, b). The dense path is a single load, always inlined (left to itself LLVM
    /// inlined the compact path into this and then this nowhere: +17 % CPU at 20k tasks);
    /// the compact paths are calls.
    #[inline(always)]
    pub(crate) fn count(&self, e: NetId, b: u32) -> u32 {
        if self.compact {
            self.compact_count(e, b)
        } else {
            self.counts[e as usize * self.k + b as usize]
        }
    }

    #[inline(never)]
    fn compact_count(&self, e: NetId, b: u32) -> u32 {
        let bits = self.bits(e);
        if bits[b as usize / 64] & (1 << (b % 64)) == 0 {
            return 0;
        }
        self.counts[self.first_slot(e) + rank(bits, b)]
    }

    /// Adds one pin of net e to block b; returns Φ(e, b) after.
    #[inline(always)]
    pub(crate) fn increment(&mut self, e: NetId, b: u32) -> u32 {
        let (word, bit) = (e as usize * self.stride + b as usize / 64, 1u64 << (b % 64));
        if self.compact {
            return self.compact_increment(e, b, word, bit);
        }
        let at = e as usize * self.k + b as usize;
        self.heads[word] |= bit;
        self.counts[at] += 1;
        self.counts[at]
    }

    #[inline(never)]
    fn compact_increment(&mut self, e: NetId, b: u32, word: usize, bit: u64) -> u32 {
        let base = self.first_slot(e);
        let at = base + rank(self.bits(e), b);
        if self.heads[word] & bit != 0 {
            self.counts[at] += 1;
            return self.counts[at];
        }
        let lambda = self.connectivity(e) as usize;
        self.counts.copy_within(at..base + lambda, at + 1);
        self.counts[at] = 1;
        self.heads[word] |= bit;
        1
    }

    /// Removes one pin of net e from block b (which must hold one); returns Φ(e, b) after.
    #[inline(always)]
    pub(crate) fn decrement(&mut self, e: NetId, b: u32) -> u32 {
        debug_assert!(self.count(e, b) > 0, "net {e} has no pin in block {b}");
        let (word, bit) = (e as usize * self.stride + b as usize / 64, 1u64 << (b % 64));
        if self.compact {
            return self.compact_decrement(e, b, word, bit);
        }
        let at = e as usize * self.k + b as usize;
        self.counts[at] -= 1;
        if self.counts[at] == 0 {
            self.heads[word] &= !bit;
        }
        self.counts[at]
    }

    #[inline(never)]
    fn compact_decrement(&mut self, e: NetId, b: u32, word: usize, bit: u64) -> u32 {
        let base = self.first_slot(e);
        let at = base + rank(self.bits(e), b);
        self.counts[at] -= 1;
        if self.counts[at] > 0 {
            return self.counts[at];
        }
        let lambda = self.connectivity(e) as usize;
        self.counts.copy_within(at + 1..base + lambda, at);
        self.heads[word] &= !bit;
        0
    }
}

/// The number of set bits below bit b in a net's bitset: b's slot among the net's blocks.
#[inline]
fn rank(bits: &[u64], b: u32) -> usize {
    let (word, bit) = (b as usize / 64, b % 64);
    let below: u32 = bits[..word].iter().map(|w| w.count_ones()).sum();
    (below + (bits[word] & ((1u64 << bit) - 1)).count_ones()) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random moves on a hypergraph with small and large nets, at k below and above 64:
    /// the compact and the dense counts always equal counts recomputed from scratch.
    #[test]
    fn counts_follow_random_moves_exactly_in_both_layouts() {
        for (k, compact) in [2usize, 5, 64, 130]
            .into_iter()
            .flat_map(|k| [(k, true), (k, false)])
        {
            let mut rng = ChaCha8Rng::seed_from_u64(k as u64);
            let n = 300u32;
            let nets: Vec<Vec<u32>> = (0..200)
                .map(|i| {
                    let size = if i % 10 == 0 { 150 } else { 2 + i % 5 };
                    let mut pins: Vec<u32> = (0..size).map(|_| rng.random_range(0..n)).collect();
                    pins.sort_unstable();
                    pins.dedup();
                    pins
                })
                .collect();
            let hg = Hypergraph::new(vec![1; n as usize], vec![1; nets.len()], nets).unwrap();
            let mut parts: Vec<u32> = (0..n).map(|_| rng.random_range(0..k as u32)).collect();
            let mut blocks = NetBlocks::with_layout(&hg, k, &parts, compact);
            for _ in 0..3_000 {
                let v = rng.random_range(0..n);
                let (from, to) = (parts[v as usize], rng.random_range(0..k as u32));
                if from == to {
                    continue;
                }
                parts[v as usize] = to;
                for &e in hg.incident_nets(v) {
                    let after_from = blocks.decrement(e, from);
                    let after_to = blocks.increment(e, to);
                    assert_eq!(after_from, blocks.count(e, from));
                    assert_eq!(after_to, blocks.count(e, to));
                }
            }
            let fresh = NetBlocks::with_layout(&hg, k, &parts, !compact);
            for e in 0..hg.num_nets() as NetId {
                let mut lambda = 0;
                for b in 0..k as u32 {
                    let dense = hg
                        .pins(e)
                        .iter()
                        .filter(|&&p| parts[p as usize] == b)
                        .count() as u32;
                    assert_eq!(blocks.count(e, b), dense, "k {k} net {e} block {b}");
                    assert_eq!(fresh.count(e, b), dense);
                    lambda += u32::from(dense > 0);
                }
                assert_eq!(blocks.connectivity(e), lambda);
                assert_eq!(blocks.bits(e), fresh.bits(e));
            }
        }
    }
}
