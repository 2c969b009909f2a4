//! A second initial partition of the coarsest k-way level for hypergraphs whose connected
//! components mostly must be cut: bin packing with splitting.
//!
//! On SAT shape-1 instances (16 hot spots, 5 % background queries) the components heavier
//! than a block weigh more than half the hypergraph, so the split-and-pack start
//! ([`super::split_pack`]) is not tried, and recursive bisection, held to its adaptive ε,
//! cuts whichever component straddles each split, including components that would fit
//! whole into a block. Here the components are taken heaviest first: one that fits the
//! room left in some block goes whole into the block where it fits tightest (best fit);
//! one that fits nowhere is cut, on its own, into a piece the size of the largest room
//! left (a 2-way multilevel bisection of that component alone, the piece between the room
//! minus a small tolerance and the room), and the rest goes back into the queue. This
//! cuts only as many components as the packing needs, each where it is cheapest for the
//! piece size asked. It runs on the coarsest level only (a few thousand vertices), is
//! refined there like the usual start, and the caller keeps the better of the two.

use std::collections::BinaryHeap;

use crate::staging::hypergraph::{Hypergraph, VertexId};
use crate::staging::partition::split_pack::Components;
use crate::staging::partition::{seed_for, Context, PartitionSettings};

/// Bisections of component remnants get the base portfolio (as in split-and-pack).
const BASE_PORTFOLIO_DEPTH: u32 = 64;

/// Portfolio runs of the bisection that cuts a piece (the base portfolio has 40): on the
/// SAT shape-1 tuning instances (2k and 20k tasks, k = 16), 10 runs gave km1 within ±2 % of
/// 40 runs at a third of the cost.
const PACK_CUT_RUNS: usize = 10;

/// The heaviest component may weigh at most this many blocks.
const MAX_COMPONENT_BLOCKS: i64 = 4;

/// True if the pack-with-splitting start is worth trying: the packing has choices to make
/// only when the components are about as heavy as blocks. So: the components heavier than
/// a block weigh more than half of the hypergraph (at most half is split-and-pack's case),
/// at least k/2 (and 2) components are heavier than the slack, and none weighs more than
/// [`MAX_COMPONENT_BLOCKS`] blocks. On the SAT shape-1 tuning instances at k = 16 (16 hot
/// spots, heaviest component 1.6–2.8 blocks) it is tried and won 8 of 9 times; at k = 64
/// (components of up to 10 blocks, 16 of them for 64 blocks) it is not, nor on IMAGE shape
/// 2 (heaviest 5 and 20 blocks at k = 16 / 64), where it lost and took 44 cuts at k = 64.
pub(super) fn worth_trying(components: &Components, caps: &[i64], slack: i64) -> bool {
    let cap = caps.iter().copied().max().unwrap_or(0);
    let total: i64 = components.weight.iter().sum();
    let must_cut: i64 = components.weight.iter().filter(|&&w| w > cap).sum();
    let large = components.weight.iter().filter(|&&w| w > slack).count();
    let heaviest = components.weight.iter().copied().max().unwrap_or(0);
    large >= 2
        && 2 * large >= caps.len()
        && 2 * must_cut > total
        && heaviest <= MAX_COMPONENT_BLOCKS * cap
}

/// A group of vertices to place: a component or the rest of one after cuts.
struct Item {
    weight: i64,
    /// Vertices of `hg`.
    vertices: Vec<VertexId>,
}

impl Context<'_> {
    /// Packs the components of `hg` into blocks of at most `caps[b]`, cutting a component
    /// only when it fits nowhere (see the module documentation). Returns the block of
    /// every vertex.
    pub(super) fn pack_with_splitting(
        &self,
        hg: &Hypergraph,
        components: &Components,
        caps: &[i64],
        seed: u64,
    ) -> Vec<u32> {
        let k = caps.len();
        let n = hg.num_vertices();
        let heaviest = hg.vertex_weights().iter().copied().max().unwrap_or(1);
        let mut members: Vec<Vec<VertexId>> = vec![Vec::new(); components.weight.len()];
        for v in 0..n {
            members[components.of_vertex[v] as usize].push(v as VertexId);
        }
        let mut items: Vec<Item> = members
            .into_iter()
            .zip(&components.weight)
            .map(|(vertices, &weight)| Item { weight, vertices })
            .collect();
        // Heaviest first; ties by first vertex (deterministic).
        let mut queue: BinaryHeap<(i64, std::cmp::Reverse<VertexId>, usize)> = items
            .iter()
            .enumerate()
            .filter(|(_, it)| !it.vertices.is_empty())
            .map(|(i, it)| (it.weight, std::cmp::Reverse(it.vertices[0]), i))
            .collect();
        let mut load = vec![0i64; k];
        let mut parts = vec![0u32; n];
        let mut cuts = 0u64;
        while let Some((_, _, i)) = queue.pop() {
            let weight = items[i].weight;
            let room = |b: usize| caps[b] - load[b];
            let fit = (0..k)
                .filter(|&b| room(b) >= weight)
                .min_by_key(|&b| (room(b), b));
            if let Some(b) = fit {
                for &v in &items[i].vertices {
                    parts[v as usize] = b as u32;
                }
                load[b] += weight;
                continue;
            }
            let b = (0..k)
                .max_by_key(|&b| (room(b), std::cmp::Reverse(b)))
                .expect("k >= 1");
            let space = room(b);
            let vertices = std::mem::take(&mut items[i].vertices);
            // A piece of the room's size, unless there is no room worth cutting for (only
            // when the caps are nearly exhausted) or the bisection found no piece that fits
            // (heavy vertices).
            let cut = (space >= heaviest && vertices.len() >= 2)
                .then(|| {
                    cuts += 1;
                    self.cut_piece(hg, &vertices, space, heaviest, seed_for(seed, cuts - 1))
                })
                .filter(|(piece, _)| !piece.is_empty());
            let Some((piece, rest)) = cut else {
                // Put the item whole where it overloads least (the refinement rebalances),
                // so that every step places weight and the loop ends.
                for &v in &vertices {
                    parts[v as usize] = b as u32;
                }
                load[b] += weight;
                continue;
            };
            let piece_weight: i64 = piece.iter().map(|&v| hg.vertex_weight(v)).sum();
            for &v in &piece {
                parts[v as usize] = b as u32;
            }
            load[b] += piece_weight;
            if !rest.is_empty() {
                let rest_weight = weight - piece_weight;
                let first = rest[0];
                items[i] = Item {
                    weight: rest_weight,
                    vertices: rest,
                };
                queue.push((rest_weight, std::cmp::Reverse(first), i));
            }
        }
        parts
    }

    /// Bisects the sub-hypergraph on `vertices` into a piece of weight in
    /// [`space` − tolerance, `space`] and the rest, at the cheapest place found.
    fn cut_piece(
        &self,
        hg: &Hypergraph,
        vertices: &[VertexId],
        space: i64,
        heaviest: i64,
        seed: u64,
    ) -> (Vec<VertexId>, Vec<VertexId>) {
        let mut keep = vec![false; hg.num_vertices()];
        for &v in vertices {
            keep[v as usize] = true;
        }
        let (sub, ids) = hg.induced(&keep);
        let total = sub.total_weight();
        let tolerance = ((space as f64 * self.config.epsilon) as i64).max(2 * heaviest);
        let perfect = [space, total - space];
        let max_weights = [space, total - space + tolerance];
        let config = PartitionSettings {
            initial_runs: PACK_CUT_RUNS,
            ..self.config.clone()
        };
        let ctx = Context { config: &config };
        let parts = ctx.multilevel(&sub, &perfect, &max_weights, BASE_PORTFOLIO_DEPTH, seed);
        let (mut piece, mut rest) = (Vec::new(), Vec::new());
        for (i, &v) in ids.iter().enumerate() {
            if parts[i] == 0 {
                piece.push(v);
            } else {
                rest.push(v);
            }
        }
        (piece, rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::metrics;
    use crate::staging::partition::PartitionSettings;

    /// A ring of `len` vertices starting at `first`, joined by 3-pin nets of weight 10.
    fn ring(first: u32, len: u32, pins: &mut Vec<Vec<u32>>) {
        for i in 0..len {
            pins.push((0..3).map(|j| first + (i + j) % len).collect());
        }
    }

    #[test]
    fn cuts_only_the_component_that_fits_nowhere() {
        // k = 4, caps 110: a ring of 150 and five rings of 50. Best-fit packing pairs the
        // 50s and cuts only the big ring, once, into a piece of 99–110 and a rest that fits
        // beside the last 50.
        let mut pins = Vec::new();
        ring(0, 150, &mut pins);
        for c in 0..5 {
            ring(150 + 50 * c, 50, &mut pins);
        }
        let hg = Hypergraph::new(vec![1; 400], vec![10; pins.len()], pins).unwrap();
        let config = PartitionSettings::new(4, 0.1, 3);
        let ctx = Context { config: &config };
        let components = Components::of(&hg);
        let caps = vec![110; 4];
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| ctx.pack_with_splitting(&hg, &components, &caps, 5))
        };
        let parts = run(1);
        assert_eq!(parts, run(2), "same packing at any thread count");
        let weights = metrics::part_weights(&hg, &parts, 4);
        assert!(weights.iter().all(|&w| w <= 110), "{weights:?}");
        // A ring cut into two arcs loses 2 nets at each of the two ends.
        assert_eq!(metrics::km1(&hg, &parts), 40);
        for c in 0..5 {
            let first = parts[150 + 50 * c];
            assert!((150 + 50 * c..200 + 50 * c).all(|v| parts[v] == first));
        }
    }

    #[test]
    fn is_tried_only_when_most_weight_must_be_cut_among_enough_components() {
        let weights = |w: &[i64]| Components {
            of_vertex: Vec::new(),
            weight: w.to_vec(),
        };
        // Must-cut share 150/400 ≤ 1/2: split-and-pack's case.
        assert!(!worth_trying(
            &weights(&[150, 50, 50, 50, 50, 50]),
            &[110; 4],
            10
        ));
        // Must-cut share 0.6 and 3 components heavier than the slack for k = 4.
        assert!(worth_trying(&weights(&[240, 80, 80]), &[110; 4], 10));
        // The same at k = 8 (caps 55): 3 large components for 8 blocks is too few.
        assert!(!worth_trying(&weights(&[240, 80, 80]), &[55; 8], 5));
        // A component of more than 4 blocks: recursive bisection's case.
        assert!(!worth_trying(&weights(&[460, 60, 60, 60]), &[110; 6], 10));
    }
}
