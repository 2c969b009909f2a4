//! A second start for hypergraphs that fall apart into connected components: cut only the
//! components too heavy for any block, each on its own into the fewest pieces that fit a
//! block, at the cheapest place (piece sizes are free up to a block's maximum weight),
//! then bin-pack the pieces and the whole components and refine the result k-way.
//!
//! Recursive bisection under its adaptive ε (about 0.5 % per level at k = 64) must hit
//! every split almost exactly, so it cuts whichever component straddles a split, often
//! through a dense region: on the IMAGE tuning instance `tuning_image1_200000_s101`
//! (3,936 components, two heavier than a block at k = 64) it cut a 1.04-block component
//! for 145,408 where a free-sized cut of that component alone costs 57,344. Forcing
//! pieces of exact block sizes instead (tried in an earlier session, commit `e1aaee7`)
//! cut dense IMAGE components badly; here a piece may take any size up to the block's
//! maximum, and [`super::Context::partition_with_small_components_as_filler`] keeps the
//! better of this start and the usual one.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::staging::hypergraph::{Hypergraph, VertexId};
use crate::staging::partition::phg::PartitionedHypergraph;
use crate::staging::partition::rebalance::rebalance;
use crate::staging::partition::tries::best_of_seeded;
use crate::staging::partition::{seed_for, Context};

/// The connected components of a hypergraph: component of every vertex and their weights.
pub(super) struct Components {
    /// Component id of every vertex.
    pub(super) of_vertex: Vec<u32>,
    /// Weight of every component.
    pub(super) weight: Vec<i64>,
}

impl Components {
    /// Components of `hg` (via its nets).
    pub(super) fn of(hg: &Hypergraph) -> Self {
        let (of_vertex, count) = super::initial::components(hg);
        let mut weight = vec![0i64; count];
        for (v, &c) in of_vertex.iter().enumerate() {
            weight[c as usize] += hg.vertex_weight(v as VertexId);
        }
        Self { of_vertex, weight }
    }

    /// True if the split-and-pack start is worth trying: at least two components heavier
    /// than `slack` (with one, the usual start already packs the rest as filler), and the
    /// components that must be cut (heavier than the largest block maximum) weigh at most
    /// half of the hypergraph. Above that, packing has too little freedom left: on the SAT
    /// shape-1 tuning instances (must-cut share 0.54–0.94) it lost to the usual start in
    /// 6 of 7 cases at 2k and 200k tasks and cost up to 4× its CPU, while on IMAGE (shares
    /// 0.14–0.31 at 200k) it won every time.
    pub(super) fn worth_packing(&self, slack: i64, max_weights: &[i64]) -> bool {
        let cap = max_weights.iter().copied().max().unwrap_or(0);
        let total: i64 = self.weight.iter().sum();
        let must_cut: i64 = self.weight.iter().filter(|&&w| w > cap).sum();
        self.weight.iter().filter(|&&w| w > slack).count() >= 2 && 2 * must_cut <= total
    }

    /// True if the split-and-pack start (when [`Self::worth_packing`]) is good enough alone:
    /// at least [`PACK_ALONE_PER_BLOCK`] components per block are heavier than `slack`.
    /// Hypergraphs under [`PACK_ALONE_MIN_VERTICES`] vertices always get both starts.
    pub(super) fn packing_suffices(&self, slack: i64, k: usize) -> bool {
        self.of_vertex.len() >= PACK_ALONE_MIN_VERTICES
            && self.weight.iter().filter(|&&w| w > slack).count() >= PACK_ALONE_PER_BLOCK * k
    }
}

/// The split-and-pack start is used alone (the usual start, multilevel recursive bisection
/// of all components heavier than the slack, is not computed unless packing ends up
/// unbalanced) when at least this many components per block are heavier than the slack.
///
/// Chosen on the tuning set (docs/decisions/004-split-and-pack-start.md): wherever
/// split-and-pack was tried on the IMAGE tuning instances (bench-tools/heldout_instances.py
/// tuning set, seed 1, K = 16 and 64), it won whenever this count was ≥ 2.8 per block, and
/// lost only on `tuning_image1_2000_s101`, K = 16 (1.8 per block: 435,200 vs 411,648); the
/// usual start was 40–60 % of the CPU there (`tuning_image0_20000`: ≥ 4.4 per block at
/// K = 16, 3.9 at K = 64, usual 8–41 % worse; `tuning_image0_200000`: 3.0–3.2 at K = 16,
/// 2.8–3.0 at K = 64, usual 48–52 % worse; `tuning_image1_20000`, K = 64: 3.3–3.7, usual
/// 7–21 % worse). Skipping it changed no partition of the IMAGE tuning set (2k, 20k, 200k)
/// and cut CPU by 60 % (K = 16) and 48 % (K = 64) on `tuning_image0_20000`. SAT instances
/// are not affected: packing is never worth trying there. At 2M tasks it does cost quality:
/// on `tuning_image0_2000000_s101`, K = 16, the usual start was the better one (km1 92,160
/// against split-and-pack's 182,272) and took 913 of main's CPU-s; alone, split-and-pack
/// takes 22 CPU-s.
const PACK_ALONE_PER_BLOCK: usize = 2;
/// Below this many vertices both starts are always computed: the partitioner's CPU target
/// starts at 20,000 tasks, both starts take well under a second here, and the held-out km1
/// margin is thinnest at 2,000 tasks (worst IMAGE ratio 1.070), where the one loss above
/// was seen.
const PACK_ALONE_MIN_VERTICES: usize = 10_000;

/// Components are cut with the base portfolio ([`super::PartitionSettings::initial_runs`]
/// runs per bisection), not the top bisection's many runs: there may be dozens of them.
///
/// Before docs/decisions/004-split-and-pack-start.md this held only for components cut in
/// two: one cut into 3 or more pieces went through recursive bisection from depth 0 (320
/// and 160 runs in its first bisections), which was 30–40 % of the split-and-pack start's
/// CPU. Passing the depth on cut CPU by 30 % (K = 16) and 40 % (K = 64) on
/// `tuning_image0_20000` and by 12–20 % on `tuning_image0_200000`; km1 stayed the same at
/// K = 16 and moved by +0.0…+2.2 % at K = 64.
const BASE_PORTFOLIO_DEPTH: u32 = 64;

/// Every component too heavy for a block is cut this many times from independent seeds
/// (in parallel), and the cheapest cut is kept.
///
/// A component is a small problem next to the whole hypergraph, but one bad cut costs the
/// whole partition: on the IMAGE shape-0 tuning instances at 200k tasks, K = 16 (s101–s112,
/// seeds 1–5), one cut each gave the usual 182,272 on 58 of 60 runs and +8 % and +9 % on
/// two; two cuts gave 182,272 on all 60 (three as well). Over the IMAGE tuning set (2k and
/// 20k, seeds 1–3; 200k, seed 1) two cuts never gave a worse km1, −0.7…−2.8 % per cell
/// where split-and-pack runs (shapes 0 and 1 from 20k up), for ×1.1–1.7 of the CPU there
/// (IMAGE shape 0 at 20k: 0.25–0.38× Mt-KaHyPar's, cell medians;
/// docs/decisions/004-split-and-pack-start.md). SAT shapes 0 and 1 never pack.
const CUT_TRIES: usize = 2;

/// A piece to pack: a whole component (`piece == u32::MAX`) or one piece of a cut one.
struct Item {
    weight: i64,
    component: u32,
    piece: u32,
}

impl Context<'_> {
    /// The split-and-pack start (see the module documentation), refined k-way on `hg`.
    pub(super) fn split_and_pack(
        &self,
        hg: &Hypergraph,
        components: &Components,
        max_weights: &[i64],
        seed: u64,
    ) -> Vec<u32> {
        let k = max_weights.len();
        let cap = max_weights.iter().copied().max().unwrap_or(0).max(1);
        let count = components.weight.len();
        let heavy: Vec<u32> = (0..count as u32)
            .filter(|&c| components.weight[c as usize] > cap)
            .collect();
        // Piece of every vertex of a cut component (within its component).
        let mut piece_of = vec![0u32; hg.num_vertices()];
        let mut items: Vec<Item> = (0..count as u32)
            .filter(|&c| components.weight[c as usize] <= cap)
            .map(|c| Item {
                weight: components.weight[c as usize],
                component: c,
                piece: u32::MAX,
            })
            .collect();
        if !heavy.is_empty() {
            let keep: Vec<bool> = components
                .of_vertex
                .iter()
                .map(|&c| components.weight[c as usize] > cap)
                .collect();
            let (union, union_ids) = hg.induced(&keep);
            let union_comp: Vec<u32> = union_ids
                .iter()
                .map(|&v| components.of_vertex[v as usize])
                .collect();
            let cuts: Vec<(Vec<VertexId>, Vec<u32>, Vec<i64>)> = heavy
                .par_iter()
                .map(|&c| {
                    let mine: Vec<bool> = union_comp.iter().map(|&x| x == c).collect();
                    let (sub, ids) = union.induced(&mine);
                    let (parts, weights) = self.cut_component(&sub, cap, seed_for(seed, c as u64));
                    let ids = ids.iter().map(|&i| union_ids[i as usize]).collect();
                    (ids, parts, weights)
                })
                .collect();
            for (&c, (ids, parts, weights)) in heavy.iter().zip(cuts) {
                for (&v, &p) in ids.iter().zip(&parts) {
                    piece_of[v as usize] = p;
                }
                items.extend(weights.iter().enumerate().map(|(p, &w)| Item {
                    weight: w,
                    component: c,
                    piece: p as u32,
                }));
            }
        }
        // Heaviest first into the block with the most room (LPT bin packing).
        items.sort_by_key(|i| (std::cmp::Reverse(i.weight), i.component, i.piece));
        let mut load = vec![0i64; k];
        let mut block_of_component = vec![0u32; count];
        let mut block_of_piece: Vec<Vec<u32>> = vec![Vec::new(); count];
        for item in &items {
            let b = (0..k)
                .max_by_key(|&b| (max_weights[b] - load[b], std::cmp::Reverse(b)))
                .expect("k >= 1");
            load[b] += item.weight;
            if item.piece == u32::MAX {
                block_of_component[item.component as usize] = b as u32;
            } else {
                let pieces = &mut block_of_piece[item.component as usize];
                if pieces.len() <= item.piece as usize {
                    pieces.resize(item.piece as usize + 1, 0);
                }
                pieces[item.piece as usize] = b as u32;
            }
        }
        let parts: Vec<u32> = (0..hg.num_vertices())
            .map(|v| {
                let c = components.of_vertex[v] as usize;
                if components.weight[c] > cap {
                    block_of_piece[c][piece_of[v] as usize]
                } else {
                    block_of_component[c]
                }
            })
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed_for(seed, u64::MAX - 1));
        self.refine(hg, parts, max_weights, &mut rng)
    }

    /// Cuts one connected hypergraph into the fewest pieces of at most `cap` each, at the
    /// cheapest place the multilevel partitioner finds (piece sizes free up to `cap`): the
    /// best of [`CUT_TRIES`] cuts (balanced first, then km1, then the lowest try), the
    /// first from `seed`. Returns the piece of every vertex and the pieces' weights.
    fn cut_component(&self, hg: &Hypergraph, cap: i64, seed: u64) -> (Vec<u32>, Vec<i64>) {
        best_of_seeded(CUT_TRIES, seed, |s| self.cut_once(hg, cap, s))
    }

    /// One cut of [`Self::cut_component`]: (unbalanced, km1), and the pieces with their
    /// weights.
    fn cut_once(
        &self,
        hg: &Hypergraph,
        cap: i64,
        seed: u64,
    ) -> ((bool, i64), (Vec<u32>, Vec<i64>)) {
        let total = hg.total_weight();
        let pieces = (((total + cap - 1) / cap) as usize).clamp(1, hg.num_vertices().max(1));
        let perfect = vec![(total + pieces as i64 - 1) / pieces as i64; pieces];
        let max_weights = vec![cap; pieces];
        let parts = self.multilevel(hg, &perfect, &max_weights, BASE_PORTFOLIO_DEPTH, seed);
        let mut phg = PartitionedHypergraph::new(hg, pieces, parts);
        let balanced = rebalance(&mut phg, &max_weights);
        let weights = phg.part_weights().to_vec();
        ((!balanced, phg.km1()), (phg.into_parts(), weights))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::metrics;
    use crate::staging::partition::tries::try_seed;
    use crate::staging::partition::PartitionSettings;

    /// A ring of `len` vertices starting at `first`, joined by 3-pin nets of weight 10.
    fn ring(first: u32, len: u32, pins: &mut Vec<Vec<u32>>, weights: &mut Vec<i64>) {
        for i in 0..len {
            pins.push((0..3).map(|j| first + (i + j) % len).collect());
            weights.push(10);
        }
    }

    #[test]
    fn cuts_the_heavy_component_only_where_it_is_thin() {
        // k = 4 blocks of 100 (max 103). One component of 104 vertices: a ring of 100
        // and a ring of 4 hung on it by one net of weight 1; the other 296 vertices are
        // 36 rings of 8 and two of 4. Cutting that one net lets everything else fit whole.
        let (mut pins, mut weights) = (Vec::new(), Vec::new());
        ring(0, 100, &mut pins, &mut weights);
        ring(100, 4, &mut pins, &mut weights);
        pins.push(vec![0, 100]);
        weights.push(1);
        for c in 0..36 {
            ring(104 + 8 * c, 8, &mut pins, &mut weights);
        }
        ring(392, 4, &mut pins, &mut weights);
        ring(396, 4, &mut pins, &mut weights);
        let hg = Hypergraph::new(vec![1; 400], weights, pins).unwrap();
        let config = PartitionSettings::new(4, 0.03, 3);
        let ctx = Context { config: &config };
        let components = Components::of(&hg);
        let max_weights = vec![103; 4];
        assert!(components.worth_packing(3, &max_weights));
        let parts = ctx.split_and_pack(&hg, &components, &max_weights, 5);
        let weights = metrics::part_weights(&hg, &parts, 4);
        assert!(weights.iter().all(|&w| w <= 103), "{weights:?}");
        assert_eq!(metrics::km1(&hg, &parts), 1);
    }

    #[test]
    fn keeps_the_cheapest_of_the_cuts() {
        // A ring of 300 vertices with 300 random 4-pin nets across it, cut into 3 pieces
        // of at most 110: the cuts differ with the seed.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (mut pins, mut weights) = (Vec::new(), Vec::new());
        ring(0, 300, &mut pins, &mut weights);
        for _ in 0..300 {
            pins.push((0..4).map(|_| rng.random_range(0..300)).collect());
            weights.push(rng.random_range(1..5));
        }
        let hg = Hypergraph::new(vec![1; 300], weights, pins).unwrap();
        let config = PartitionSettings::new(3, 0.03, 1);
        let ctx = Context { config: &config };
        let mut tries_differ = false;
        for seed in 0..6 {
            let (parts, piece_weights) = ctx.cut_component(&hg, 110, seed);
            assert_eq!(piece_weights.len(), 3);
            assert!(piece_weights.iter().all(|&w| w <= 110), "{piece_weights:?}");
            let each: Vec<(bool, i64)> = (0..CUT_TRIES)
                .map(|t| ctx.cut_once(&hg, 110, try_seed(seed, t)).0)
                .collect();
            assert_eq!(
                (false, metrics::km1(&hg, &parts)),
                *each.iter().min().unwrap()
            );
            tries_differ |= each.iter().any(|key| *key != each[0]);
        }
        assert!(tries_differ, "the tries gave the same cut for every seed");
    }

    #[test]
    fn is_used_alone_with_two_components_per_block_above_the_slack() {
        // 250 components of 40 vertices: 250 ≥ 2·125 above a slack of 3, not 2·126, none
        // above 40; 9 of them (360 vertices) are too few vertices to skip the usual start.
        let rings = |count: u32| {
            let (mut pins, mut weights) = (Vec::new(), Vec::new());
            for c in 0..count {
                ring(40 * c, 40, &mut pins, &mut weights);
            }
            Hypergraph::new(vec![1; 40 * count as usize], weights, pins).unwrap()
        };
        let components = Components::of(&rings(250));
        assert!(components.packing_suffices(3, 125));
        assert!(!components.packing_suffices(3, 126));
        assert!(!components.packing_suffices(40, 4));
        assert!(!Components::of(&rings(9)).packing_suffices(3, 4));
    }

    #[test]
    fn is_not_tried_when_most_weight_must_be_cut() {
        let (mut pins, mut weights) = (Vec::new(), Vec::new());
        ring(0, 300, &mut pins, &mut weights);
        ring(300, 100, &mut pins, &mut weights);
        let hg = Hypergraph::new(vec![1; 400], weights, pins).unwrap();
        assert!(!Components::of(&hg).worth_packing(3, &[103; 4]));
    }
}
