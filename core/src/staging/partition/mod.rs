//! Multilevel k-way hypergraph partitioner minimizing connectivity − 1 (km1) under a
//! balance constraint, in the style of KaHyPar / Mt-KaHyPar's default preset
//! (see shared/reference/partitioning.md):
//!
//! 1. preprocessing (single-pin nets dropped, identical nets merged),
//! 2. coarsening by heavy-edge clustering down to 160·k vertices ([`coarsen`]); inside
//!    bisections, twins too large to rate are merged first ([`twins`]),
//! 3. initial partitioning of the coarsest level by recursive bisection, where every
//!    bisection is itself multilevel with a portfolio of flat algorithms ([`initial`]),
//! 4. uncoarsening with label propagation and FM with rollback at every level: localized
//!    k-way FM ([`localized_fm`]) at k-way levels, global gain-cached 2-way passes in
//!    bisections ([`fm_two_way`]),
//! 5. a rebalancer that enforces the per-block maximum weights.
//!
//! Small inputs get up to 4 independent tries of all of this, and the best is kept
//! ([`tries`]).
//!
//! Connected components lighter than the balance slack are set aside, the rest is
//! partitioned with the whole slack, and the small components are then bin-packed into
//! the room left (largest first into the block with the most room, which always fits).
//! When the hypergraph falls apart into components, a second start ([`split_pack`]) cuts
//! only the components heavier than a block, each on its own at its cheapest place, packs
//! pieces and components, and the better of the two starts is kept (with at least two
//! components per block heavier than the slack, split-and-pack alone is used). When
//! instead most of the weight lies in components that must be cut, and they are about as
//! heavy as blocks, the coarsest k-way level also gets a bin-packing-with-splitting start
//! ([`pack_split`]), and the better of it and recursive bisection's partition is
//! uncoarsened.
//!
//! Deterministic for a seed, whatever the thread count: all randomness comes from seeded
//! ChaCha streams, and the parallel parts (clustering and label propagation in sub-rounds,
//! localized FM's two lanes on large levels, portfolio runs, the two halves of a bisection,
//! net mapping during contraction, pin counts) combine their results in a fixed order.

mod coarsen;
mod fm;
mod fm_two_way;
mod initial;
mod label_propagation;
mod localized_fm;
mod net_blocks;
mod pack_split;
mod phg;
mod rebalance;
mod split_pack;
mod tries;
mod twins;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::staging::error::StagingError;
use crate::staging::hypergraph::{Hypergraph, VertexId};
use crate::staging::metrics;
use fm::{fm_refine, FmSettings};
use label_propagation::label_propagation;
use localized_fm::{localized_fm, LocalizedFmSettings};
use phg::PartitionedHypergraph;
use rebalance::{is_balanced, rebalance};
use split_pack::Components;

/// What to partition for.
#[derive(Debug, Clone)]
pub struct PartitionSettings {
    /// Number of blocks k.
    pub k: usize,
    /// Allowed imbalance ε: block b may weigh at most ⌊(1 + ε)·target_b⌋.
    pub epsilon: f64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Relative block capacities (e.g. node speeds); `None` means equal blocks. Block b's
    /// target is c(V)·capacity_b / Σ capacity (rounded up).
    pub(crate) block_capacities: Option<Vec<f64>>,
    /// Runs of the initial bisection portfolio.
    pub initial_runs: usize,
    /// Runs of the portfolio in the top bisection of recursive bisection (and for k = 2);
    /// each level below gets half as many, but never fewer than `initial_runs`. The top
    /// cuts constrain every block below them, and there are few of them, so extra runs
    /// there are cheap. Tuned on SAT medium overlap, 2,000 tasks, k = 16, seeds 1–6: mean
    /// cut files 32.3 / 33.3 / 31.5 / 30.7 / 29.8 for 40 / 160 / 320 / 640 / 1280 runs;
    /// 320 costs +12 % CPU on SAT high k = 64, 640 already +50 %.
    pub top_initial_runs: usize,
    /// Coarsening stops at `contraction_factor · k` vertices (k > 2).
    pub(crate) contraction_factor: usize,
    /// Coarsening of a bisection (inside recursive bisection, or k = 2) stops here; a
    /// small coarsest level lets the portfolio explore more distinct cuts (tuned on
    /// the SAT/IMAGE instances: 100 beat 64, 150, 320 and 1000 on median km1).
    pub(crate) bisection_contraction_limit: usize,
    /// During a bisection's FM pass a block may exceed its maximum weight by this many
    /// times the heaviest vertex's weight (only balanced prefixes are kept), so FM can swap
    /// vertices under recursive bisection's tight adaptive ε (tuned on SAT medium overlap:
    /// 2 beat 0, 1, 4, 8 and 16 on mean km1 over 9 seeds).
    pub(crate) bisection_overload_vertices: i64,
    /// Label propagation rounds per level.
    pub(crate) lp_rounds: usize,
    /// FM passes per level (rounds of localized FM at k-way levels).
    pub(crate) fm_passes: usize,
    /// Boundary vertices that seed one localized FM search (k-way levels).
    pub(crate) fm_seeds_per_search: usize,
    /// A localized FM search stops after this many moves without a new best prefix.
    pub(crate) fm_max_fruitless_moves: usize,
}

impl PartitionSettings {
    /// The defaults that match Mt-KaHyPar's default preset in spirit: contraction limit
    /// 160·k (100 vertices inside bisections), a 40-run initial portfolio (320 runs in
    /// the top bisection, halving per level), 5 LP rounds and up to 10 FM passes per level.
    pub fn new(k: usize, epsilon: f64, seed: u64) -> Self {
        Self {
            k,
            epsilon,
            seed,
            block_capacities: None,
            initial_runs: 40,
            top_initial_runs: 320,
            bisection_contraction_limit: 100,
            bisection_overload_vertices: 2,
            contraction_factor: 160,
            lp_rounds: 5,
            fm_passes: 10,
            fm_seeds_per_search: 50,
            fm_max_fruitless_moves: 25,
        }
    }
}

/// A k-way partition and its quality.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// Block of every vertex.
    pub parts: Vec<u32>,
    /// Number of blocks.
    pub(crate) k: usize,
    /// Σ_e w(e)(λ(e) − 1).
    pub km1: i64,
    /// max_b c(V_b)/⌈c(V)/k⌉ − 1 (KaHyPar's definition).
    pub imbalance: f64,
    /// c(V_b).
    pub(crate) part_weights: Vec<i64>,
    /// Maximum allowed weight per block.
    pub(crate) max_part_weights: Vec<i64>,
    /// True if every block is within its maximum weight.
    pub feasible: bool,
}

/// Partitions `hg` into `config.k` blocks.
///
/// Errors if k is 0 or exceeds the vertex count, if ε is negative, or if the block
/// capacities are unusable. If no feasible partition is found (only possible when single
/// vertices are too heavy for the blocks), the best one is returned with `feasible =
/// false`.
pub fn partition(hg: &Hypergraph, config: &PartitionSettings) -> Result<Partition, StagingError> {
    let k = config.k;
    if k == 0 || k > hg.num_vertices() {
        return Err(StagingError::InvalidK {
            k,
            num_vertices: hg.num_vertices(),
        });
    }
    if !config.epsilon.is_finite() || config.epsilon < 0.0 {
        return Err(StagingError::InvalidEpsilon(config.epsilon));
    }
    let perfect = perfect_weights(hg.total_weight(), k, config.block_capacities.as_deref())?;
    let max_weights: Vec<i64> = perfect
        .iter()
        .map(|&p| ((1.0 + config.epsilon) * p as f64).floor() as i64)
        .collect();
    let parts = if k == 1 {
        vec![0; hg.num_vertices()]
    } else {
        // Preprocessing: contraction with the identity drops single-pin nets and merges
        // identical nets without changing km1 of any partition.
        let identity: Vec<VertexId> = (0..hg.num_vertices() as VertexId).collect();
        let pre = coarsen::contract(hg, &identity, hg.num_vertices());
        let ctx = Context { config };
        let mut parts = ctx.best_of_tries(&pre, &perfect, &max_weights, config.seed);
        let mut phg = PartitionedHypergraph::new(hg, k, std::mem::take(&mut parts));
        if !rebalance(&mut phg, &max_weights) {
            // Last resort: longest-processing-time bin packing always finds a feasible
            // assignment when vertices are light enough; refine it and keep the better.
            let lpt = lpt_assignment(hg, &max_weights);
            let mut alt = PartitionedHypergraph::new(hg, k, lpt);
            if is_balanced(&alt, &max_weights) {
                let mut rng = ChaCha8Rng::seed_from_u64(seed_for(config.seed, u64::MAX));
                label_propagation(&mut alt, &max_weights, config.lp_rounds, &mut rng);
                fm_refine(&mut alt, &max_weights, ctx.fm_config(hg, k));
                phg = alt;
            }
        }
        phg.into_parts()
    };
    let part_weights = metrics::part_weights(hg, &parts, k);
    let feasible = part_weights.iter().zip(&max_weights).all(|(w, m)| w <= m);
    Ok(Partition {
        km1: metrics::km1(hg, &parts),
        imbalance: metrics::imbalance(hg, &parts, k),
        part_weights,
        max_part_weights: max_weights,
        feasible,
        parts,
        k,
    })
}

/// Target weight of each block: ⌈c(V)/k⌉, or proportional to the capacities.
fn perfect_weights(
    total: i64,
    k: usize,
    capacities: Option<&[f64]>,
) -> Result<Vec<i64>, StagingError> {
    match capacities {
        None => Ok(vec![metrics::perfect_part_weight(total, k); k]),
        Some(c) => {
            if c.len() != k {
                return Err(StagingError::InvalidTargets(format!(
                    "{} capacities for k = {k} blocks",
                    c.len()
                )));
            }
            if c.iter().any(|x| !x.is_finite() || *x <= 0.0) {
                return Err(StagingError::InvalidTargets(
                    "capacities must be finite and positive".into(),
                ));
            }
            let sum: f64 = c.iter().sum();
            Ok(c.iter()
                .map(|x| (total as f64 * x / sum).ceil() as i64)
                .collect())
        }
    }
}

/// The room every block has above its target: min_b(max_b − perfect_b).
fn slack(perfect: &[i64], max_weights: &[i64]) -> i64 {
    perfect
        .iter()
        .zip(max_weights)
        .map(|(p, m)| m - p)
        .min()
        .unwrap_or(0)
}

/// How far a bisection's FM may overload a block: `vertices` times the heaviest vertex.
pub(crate) fn bisection_allowance(hg: &Hypergraph, vertices: i64) -> i64 {
    vertices * hg.vertex_weights().iter().copied().max().unwrap_or(0)
}

/// Derives an independent seed for a sub-computation (SplitMix64 finalizer).
pub(crate) fn seed_for(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        .wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Assigns vertices heaviest first to the block with the most room left.
fn lpt_assignment(hg: &Hypergraph, max_weights: &[i64]) -> Vec<u32> {
    let mut order: Vec<VertexId> = (0..hg.num_vertices() as VertexId).collect();
    order.sort_by_key(|&v| (std::cmp::Reverse(hg.vertex_weight(v)), v));
    let mut weights = vec![0i64; max_weights.len()];
    let mut parts = vec![0u32; hg.num_vertices()];
    for v in order {
        let b = (0..max_weights.len())
            .max_by_key(|&b| (max_weights[b] - weights[b], std::cmp::Reverse(b)))
            .expect("k >= 1");
        weights[b] += hg.vertex_weight(v);
        parts[v as usize] = b as u32;
    }
    parts
}

struct Context<'c> {
    config: &'c PartitionSettings,
}

impl Context<'_> {
    /// FM settings for a level; bisections get the swap allowance (see
    /// [`PartitionSettings::bisection_overload_vertices`]).
    fn fm_config(&self, hg: &Hypergraph, k: usize) -> FmSettings {
        FmSettings {
            passes: self.config.fm_passes,
            max_fruitless_moves: 350.min(hg.num_vertices() / 4 + 50),
            min_relative_improvement: 0.001,
            allowance: if k == 2 {
                bisection_allowance(hg, self.config.bisection_overload_vertices)
            } else {
                0
            },
        }
    }

    /// Localized FM settings for a k-way level (50 seeds per search and 25 fruitless
    /// moves: tuned on the tuning set of bench-tools/heldout_instances.py, SAT 200k, k = 16
    /// and 64, against 5/25/50 seeds and 10/15/25/50/100 moves).
    fn localized_fm_config(&self) -> LocalizedFmSettings {
        LocalizedFmSettings {
            rounds: self.config.fm_passes,
            seeds_per_search: self.config.fm_seeds_per_search,
            max_fruitless_moves: self.config.fm_max_fruitless_moves,
            min_relative_improvement: 0.001,
        }
    }

    /// Partitions the components heavier than the slack min_b(max_b − perfect_b), then
    /// packs the lighter ones into the room left. Each light component fits: the total
    /// room is at least k·slack plus their weight, so the roomiest block has ≥ slack.
    /// When the hypergraph falls apart into components, the split-and-pack start
    /// ([`split_pack`]) is tried as well and the better result kept (feasible first,
    /// then km1); when it [suffices](Components::packing_suffices), it is used alone
    /// unless it ends up unbalanced.
    fn partition_with_small_components_as_filler(
        &self,
        hg: &Hypergraph,
        perfect: &[i64],
        max_weights: &[i64],
        seed: u64,
    ) -> Vec<u32> {
        let components = Components::of(hg);
        let slack = slack(perfect, max_weights);
        let worth_packing = components.worth_packing(slack, max_weights);
        let judge = |parts: Vec<u32>| {
            let mut phg = PartitionedHypergraph::new(hg, perfect.len(), parts);
            let balanced = rebalance(&mut phg, max_weights);
            ((!balanced, phg.km1()), phg.into_parts())
        };
        let pack = || self.split_and_pack(hg, &components, max_weights, seed_for(seed, 11));
        let mut packed = None;
        if worth_packing && components.packing_suffices(slack, perfect.len()) {
            let (key, parts) = judge(pack());
            if !key.0 {
                return parts;
            }
            packed = Some((key, parts));
        }
        let usual = self.with_filler(hg, &components, perfect, max_weights, seed);
        if !worth_packing {
            return usual;
        }
        let (usual_key, usual) = judge(usual);
        if usual_key == (false, 0) {
            return usual;
        }
        let (packed_key, packed) = packed.unwrap_or_else(|| judge(pack()));
        if packed_key < usual_key {
            packed
        } else {
            usual
        }
    }

    /// The usual start: multilevel on the components heavier than the slack, the lighter
    /// ones bin-packed as filler (see [`Self::partition_with_small_components_as_filler`]).
    fn with_filler(
        &self,
        hg: &Hypergraph,
        components: &Components,
        perfect: &[i64],
        max_weights: &[i64],
        seed: u64,
    ) -> Vec<u32> {
        let k = perfect.len();
        let slack = slack(perfect, max_weights);
        let comp = &components.of_vertex;
        let comp_weight = &components.weight;
        let count = comp_weight.len();
        let small: Vec<bool> = comp_weight.iter().map(|&w| w <= slack).collect();
        let keep: Vec<bool> = comp.iter().map(|&c| !small[c as usize]).collect();
        let kept = keep.iter().filter(|&&x| x).count();
        if kept == hg.num_vertices() || kept < k {
            return self.multilevel(hg, perfect, max_weights, 0, seed);
        }
        let (large, ids) = hg.induced(&keep);
        let scale = large.total_weight() as f64 / hg.total_weight() as f64;
        let large_perfect: Vec<i64> = perfect
            .iter()
            .map(|&p| (p as f64 * scale).ceil() as i64)
            .collect();
        let large_parts = {
            let parts = self.multilevel(&large, &large_perfect, max_weights, 0, seed);
            let mut phg = PartitionedHypergraph::new(&large, k, parts);
            rebalance(&mut phg, max_weights);
            phg.into_parts()
        };
        let mut parts = vec![0u32; hg.num_vertices()];
        let mut load = vec![0i64; k];
        for (i, &v) in ids.iter().enumerate() {
            parts[v as usize] = large_parts[i];
            load[large_parts[i] as usize] += hg.vertex_weight(v);
        }
        let mut items: Vec<usize> = (0..count).filter(|&c| small[c]).collect();
        items.sort_by_key(|&c| (std::cmp::Reverse(comp_weight[c]), c));
        let mut block_of_comp = vec![0u32; count];
        for c in items {
            let b = (0..k)
                .max_by_key(|&b| (max_weights[b] - load[b], std::cmp::Reverse(b)))
                .expect("k >= 1");
            load[b] += comp_weight[c];
            block_of_comp[c] = b as u32;
        }
        for v in 0..hg.num_vertices() {
            if small[comp[v] as usize] {
                parts[v] = block_of_comp[comp[v] as usize];
            }
        }
        parts
    }

    /// Portfolio runs for a bisection at `depth` of the recursive bisection tree.
    fn portfolio_runs(&self, depth: u32) -> usize {
        let top = self.config.top_initial_runs.checked_shr(depth).unwrap_or(0);
        top.max(self.config.initial_runs)
    }

    /// Multilevel partition of `hg` into `perfect.len()` blocks; a bisection (k = 2) at
    /// `depth` of the recursive bisection tree gets [`Self::portfolio_runs`] runs, and for
    /// k > 2 the recursive bisection of the coarsest level starts at `depth` (0 for the
    /// partition itself, deeper for the components that [`split_pack`] cuts).
    fn multilevel(
        &self,
        hg: &Hypergraph,
        perfect: &[i64],
        max_weights: &[i64],
        depth: u32,
        seed: u64,
    ) -> Vec<u32> {
        let k = perfect.len();
        if k == 1 {
            return vec![0; hg.num_vertices()];
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let limit = if k == 2 {
            self.config.bisection_contraction_limit
        } else {
            self.config.contraction_factor * k
        };
        let levels = coarsen::coarsen(hg, limit, k > 2, &mut rng);
        let coarsest = levels.last().map_or(hg, |l| &l.coarse);
        let mut parts = if k == 2 {
            coarsest_bisection(self, coarsest, perfect, max_weights, depth, seed)
        } else {
            self.recursive_bisection(coarsest, perfect, max_weights, depth, seed_for(seed, 1))
        };
        parts = self.refine(coarsest, parts, max_weights, &mut rng);
        if k > 2 {
            parts = self.better_coarsest_start(coarsest, parts, perfect, max_weights, seed);
        }
        for i in (0..levels.len()).rev() {
            let finer = if i == 0 { hg } else { &levels[i - 1].coarse };
            let map = &levels[i].fine_to_coarse;
            let projected: Vec<u32> = map.iter().map(|&c| parts[c as usize]).collect();
            parts = self.refine(finer, projected, max_weights, &mut rng);
        }
        parts
    }

    /// On the coarsest k-way level, also tries the pack-with-splitting start
    /// ([`pack_split`]) when most of the weight lies in components that must be cut, and
    /// keeps the better of it (refined) and `usual` (already refined): balanced first,
    /// then km1, ties to `usual`.
    fn better_coarsest_start(
        &self,
        coarsest: &Hypergraph,
        usual: Vec<u32>,
        perfect: &[i64],
        max_weights: &[i64],
        seed: u64,
    ) -> Vec<u32> {
        let components = Components::of(coarsest);
        let caps: Vec<i64> = perfect
            .iter()
            .zip(max_weights)
            .map(|(&p, &m)| m.min(((1.0 + self.config.epsilon) * p as f64).ceil() as i64))
            .collect();
        if !pack_split::worth_trying(&components, &caps, slack(perfect, max_weights)) {
            return usual;
        }
        let k = perfect.len();
        let key = |parts: &[u32]| {
            let phg = PartitionedHypergraph::new(coarsest, k, parts.to_vec());
            (!is_balanced(&phg, max_weights), phg.km1())
        };
        let packed = self.pack_with_splitting(coarsest, &components, &caps, seed_for(seed, 13));
        let mut rng = ChaCha8Rng::seed_from_u64(seed_for(seed, 14));
        let packed = self.refine(coarsest, packed, max_weights, &mut rng);
        if key(&packed) < key(&usual) {
            packed
        } else {
            usual
        }
    }

    /// Rebalance, label propagation, FM.
    fn refine(
        &self,
        hg: &Hypergraph,
        parts: Vec<u32>,
        max_weights: &[i64],
        rng: &mut ChaCha8Rng,
    ) -> Vec<u32> {
        let k = max_weights.len();
        let mut phg = PartitionedHypergraph::new(hg, k, parts);
        rebalance(&mut phg, max_weights);
        label_propagation(&mut phg, max_weights, self.config.lp_rounds, rng);
        if k > 2 {
            localized_fm(&mut phg, max_weights, self.localized_fm_config(), rng);
        } else {
            fm_refine(&mut phg, max_weights, self.fm_config(hg, k));
        }
        phg.into_parts()
    }

    /// Recursive bisection into `perfect.len()` blocks with an adapted ε per level, so the
    /// final blocks meet their maximum weights (KaHyPar's adaptive imbalance). `depth` is
    /// this bisection's level in the tree (0 at the top).
    fn recursive_bisection(
        &self,
        hg: &Hypergraph,
        perfect: &[i64],
        max_weights: &[i64],
        depth: u32,
        seed: u64,
    ) -> Vec<u32> {
        let k = perfect.len();
        if k == 1 || hg.num_vertices() == 0 {
            return vec![0; hg.num_vertices()];
        }
        let k_left = k.div_ceil(2);
        let (bis_perfect, bis_max) = bisection_targets(hg.total_weight(), perfect, max_weights);
        let bisection = self.multilevel(hg, &bis_perfect, &bis_max, depth, seed);
        let mut parts = vec![0u32; hg.num_vertices()];
        let (left_keep, right_keep): (Vec<bool>, Vec<bool>) =
            bisection.iter().map(|&b| (b == 0, b == 1)).unzip();
        let (left_hg, left_ids) = hg.induced(&left_keep);
        let (right_hg, right_ids) = hg.induced(&right_keep);
        let (left_parts, right_parts) = rayon::join(
            || {
                self.recursive_bisection(
                    &left_hg,
                    &perfect[..k_left],
                    &max_weights[..k_left],
                    depth + 1,
                    seed_for(seed, 2),
                )
            },
            || {
                self.recursive_bisection(
                    &right_hg,
                    &perfect[k_left..],
                    &max_weights[k_left..],
                    depth + 1,
                    seed_for(seed, 3),
                )
            },
        );
        for (i, &v) in left_ids.iter().enumerate() {
            parts[v as usize] = left_parts[i];
        }
        for (i, &v) in right_ids.iter().enumerate() {
            parts[v as usize] = right_parts[i] + k_left as u32;
        }
        parts
    }
}

/// The bisection's two targets and maxima for splitting blocks [0, k/2) vs [k/2, k):
/// ε' = (Σ max_b / c(V'))^{1/⌈log2 k⌉} − 1, applied to targets proportional to the
/// blocks' perfect weights.
fn bisection_targets(total: i64, perfect: &[i64], max_weights: &[i64]) -> (Vec<i64>, Vec<i64>) {
    let k = perfect.len();
    let k_left = k.div_ceil(2);
    let depth = (k as f64).log2().ceil().max(1.0);
    let max_sum: i64 = max_weights.iter().sum();
    let ratio = (max_sum as f64 / total.max(1) as f64).max(1.0);
    let eps = ratio.powf(1.0 / depth) - 1.0;
    let p_left: i64 = perfect[..k_left].iter().sum();
    let p_all: i64 = perfect.iter().sum();
    let left = ((total as f64) * p_left as f64 / p_all as f64).round() as i64;
    let targets = vec![left, total - left];
    let maxima = targets
        .iter()
        .map(|&t| ((1.0 + eps) * t as f64).floor() as i64)
        .collect();
    (targets, maxima)
}

/// Initial bisection of the coarsest level.
fn coarsest_bisection(
    ctx: &Context<'_>,
    hg: &Hypergraph,
    perfect: &[i64],
    max_weights: &[i64],
    depth: u32,
    seed: u64,
) -> Vec<u32> {
    initial::portfolio_bisection(
        hg,
        [perfect[0], perfect[1]],
        [max_weights[0], max_weights[1]],
        ctx.portfolio_runs(depth),
        bisection_allowance(hg, ctx.config.bisection_overload_vertices),
        seed_for(seed, 7),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::Rng;

    /// A random hypergraph with planted communities.
    fn planted(n: usize, communities: usize, nets: usize, seed: u64) -> Hypergraph {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut pins = Vec::new();
        for _ in 0..nets {
            let c = rng.random_range(0..communities);
            let size = rng.random_range(2..6);
            let net: Vec<u32> = (0..size)
                .map(|_| {
                    if rng.random_bool(0.9) {
                        (c * n / communities + rng.random_range(0..n / communities)) as u32
                    } else {
                        rng.random_range(0..n) as u32
                    }
                })
                .collect();
            pins.push(net);
        }
        let weights = (0..n).map(|_| rng.random_range(1..4)).collect();
        Hypergraph::new(weights, vec![1; nets], pins).unwrap()
    }

    #[test]
    fn finds_planted_communities_and_beats_random() {
        let hg = planted(600, 4, 1500, 3);
        let p = partition(&hg, &PartitionSettings::new(4, 0.03, 1)).unwrap();
        assert!(p.feasible);
        assert_eq!(p.km1, metrics::km1(&hg, &p.parts));
        let random: Vec<u32> = (0..600).map(|v| (v % 4) as u32).collect();
        assert!(p.km1 * 3 < metrics::km1(&hg, &random), "km1 {}", p.km1);
    }

    #[test]
    fn is_deterministic_for_a_seed() {
        let hg = planted(500, 8, 1200, 5);
        let cfg = PartitionSettings::new(8, 0.03, 42);
        assert_eq!(partition(&hg, &cfg).unwrap(), partition(&hg, &cfg).unwrap());
    }

    #[test]
    fn does_not_depend_on_the_thread_count() {
        // Large enough for several clustering / label propagation sub-rounds.
        let hg = planted(9_000, 8, 20_000, 8);
        let mut cfg = PartitionSettings::new(4, 0.03, 7);
        (cfg.initial_runs, cfg.top_initial_runs) = (4, 4);
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| partition(&hg, &cfg).unwrap())
        };
        let one = run(1);
        assert!(one.feasible);
        assert_eq!(one, run(2));
    }

    #[test]
    fn portfolio_runs_halve_per_level_down_to_the_base() {
        let cfg = PartitionSettings::new(64, 0.03, 0);
        let ctx = Context { config: &cfg };
        let runs: Vec<usize> = [0, 1, 2, 3, 70].map(|d| ctx.portfolio_runs(d)).to_vec();
        assert_eq!(runs, vec![320, 160, 80, 40, 40]);
        let mut small_top = cfg.clone();
        small_top.top_initial_runs = 10;
        let ctx = Context { config: &small_top };
        assert_eq!(ctx.portfolio_runs(0), 40);
    }

    #[test]
    fn rejects_bad_k_and_epsilon() {
        let hg = planted(10, 2, 10, 1);
        assert!(matches!(
            partition(&hg, &PartitionSettings::new(11, 0.03, 0)),
            Err(StagingError::InvalidK { k: 11, .. })
        ));
        assert!(partition(&hg, &PartitionSettings::new(0, 0.03, 0)).is_err());
        assert!(partition(&hg, &PartitionSettings::new(2, -0.1, 0)).is_err());
    }

    #[test]
    fn honours_heterogeneous_capacities() {
        let hg = planted(400, 4, 800, 9);
        let mut cfg = PartitionSettings::new(3, 0.05, 2);
        cfg.block_capacities = Some(vec![1.0, 2.0, 1.0]);
        let p = partition(&hg, &cfg).unwrap();
        assert!(p.feasible);
        assert!(p.part_weights[1] > p.part_weights[0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Unit weights always admit a feasible partition; we must find one, and the
        /// reported km1 must be the real one.
        #[test]
        fn always_feasible_with_unit_weights(n in 8usize..120, k in 2usize..9, seed in 0u64..1000) {
            prop_assume!(k <= n);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let nets: Vec<Vec<u32>> = (0..n)
                .map(|_| (0..rng.random_range(2..5)).map(|_| rng.random_range(0..n) as u32).collect())
                .collect();
            let hg = Hypergraph::new(vec![1; n], vec![1; n], nets).unwrap();
            let p = partition(&hg, &PartitionSettings::new(k, 0.0, seed)).unwrap();
            prop_assert!(p.feasible, "weights {:?} max {:?}", p.part_weights, p.max_part_weights);
            prop_assert_eq!(p.km1, metrics::km1(&hg, &p.parts));
            prop_assert_eq!(p.parts.len(), n);
            prop_assert!(p.parts.iter().all(|&b| (b as usize) < k));
        }
    }
}
