//! Multilevel coarsening by clustering (partitioning.md items 4–6): in a seeded random
//! order every still-singleton vertex joins the neighbouring cluster with the highest
//! heavy-edge rating r(u, C) = Σ_{e ∋ u, e ∩ C ≠ ∅} w(e)/(|e| − 1), preferring singleton
//! clusters on ties, never exceeding the maximum cluster weight. A level shrinks the
//! vertex count by at most 2.5; coarsening stops at the contraction limit or when a level
//! shrinks by less than 1 % (k-way coarsening also stops after [`SLOW_LEVELS`] levels in
//! a row that shrink by less than 5 %, see [`coarsen`]). Contraction drops single-pin nets
//! and merges parallel nets (summing their weights), which also serves as preprocessing
//! of the input.
//!
//! Rating a vertex scans every pin of every net it is in, so a level costs Σ_e |e|² —
//! quadratic in net size. Nets above [`MAX_RATED_NET`] pins are not rated at all
//! (Mt-KaHyPar's threshold is 1,000; ours is 200, see its doc). Below that, a net is
//! skipped for u when even its lightest other pin could not take u
//! (`c(u) + min_{v ∈ e, v ≠ u} c(v) > max cluster weight`): cluster weights only grow
//! during a pass and a pin's cluster weighs at least the pin, so such a net adds rating
//! only to clusters u may not join, and skipping it changes no choice.
//! On IMAGE instances, whose coarse levels are full of near-maximum-weight vertices on
//! many-pin nets, this removes most of the rating work of the late levels.
//!
//! A vertex whose nets all have more than [`MAX_RATED_NET`] pins is rated only by the
//! fallback ([`FALLBACK_RATED_NET`]), and not at all above that. In a bisection's
//! coarsening such vertices are first merged with their twins (same nets,
//! [`super::twins`]), which loses no km1. On IMAGE shape 2 at 20k tasks a quarter of the
//! tasks read only files shared by more than 1,000 tasks; without this, recursive
//! bisection's coarsening levels shrank by a median factor of only 1.22 and took most of
//! the CPU. Tuned on the tuning set (docs/decisions/007-coarsening-rated-nets-and-twins.md;
//! 2k/20k seeds 1–3, 200k seed 1, against the same build without it): CPU ×0.46–0.72 on
//! IMAGE shapes 0 and 2 at 20k (shape 2, K = 16: 0.65× Mt-KaHyPar's, was 0.90×) and ×0.09
//! on shape 2 at 200k (34–39 → 3–4 CPU-s); km1 per cell −8…+3 % (geometric mean); SAT
//! unchanged (no SAT net has 200 pins). Merging twins in k-way coarsening as well cost km1
//! on IMAGE shape 0 at 200k (all twins: `tuning_image0_200000_s102`, K = 16, +34 %, 1.31×
//! Mt-KaHyPar's; k-way levels only: +14 % on s101), so k-way levels rate twins as before.

use std::cell::RefCell;
use std::collections::HashMap;

use rand::seq::SliceRandom;
use rand::Rng;
use rayon::prelude::*;

use super::twins::twin_groups;
use crate::staging::hypergraph::{Hypergraph, NetId, VertexId};

/// Nets above this size are ignored when rating (they say little about locality: a net
/// of 200 pins adds 1/199 of its weight to each pin's rating).
///
/// It was 1,000 (Mt-KaHyPar's value) before
/// docs/decisions/007-coarsening-rated-nets-and-twins.md. On IMAGE instances the
/// 200–1,000-pin nets (popular images) made ~80 % of the rating work, and on the k-way
/// levels whose clusters are nearly full they kept every light vertex rating hundreds of
/// candidates it then could not join. With 200 (plus [`FALLBACK_RATED_NET`] and
/// [`SLOW_LEVELS`]), on the tuning IMAGE instances (20k, shapes 0–2, seeds 101–103) CPU
/// fell by 30–40 % at K = 16 and 25–37 % at K = 64, km1 moved by −15…0 % at K = 16 and
/// −9…+5.6 % at K = 64, and on 200k by −25…0 %
/// (docs/decisions/007-coarsening-rated-nets-and-twins.md). SAT nets have fewer than 200
/// pins: SAT partitions do not change.
const MAX_RATED_NET: usize = 200;
/// A vertex that no net up to [`MAX_RATED_NET`] pins can place is rated again with its
/// nets up to this size (Mt-KaHyPar's threshold). Without this, vertices whose nets are all
/// large could join nobody, and the coarsening of a bisection of a 200k IMAGE instance
/// stalled at thousands of vertices (the initial portfolio then took 30 s).
const FALLBACK_RATED_NET: usize = 1000;
/// Largest shrink factor of one level.
const MAX_SHRINK: f64 = 2.5;
/// A level that shrinks the vertex count by less than this factor is a slow level.
const SLOW_SHRINK: f64 = 1.05;
/// k-way coarsening stops at the second slow level in a row (which is dropped).
///
/// When the clusters are nearly as heavy as the maximum cluster weight (IMAGE: vertices
/// of nearly equal weight and a contraction limit that asks for full clusters), each level
/// only merges the few light vertices left and shrinks by 2–4 %; `tuning_image0_20000`
/// took 24 k-way levels, each rated, contracted and refined. Stopping at the second slow
/// level leaves a somewhat larger coarsest level to recursive bisection, whose own
/// coarsening shrinks fast (its maximum cluster weight is c(V)/100). SAT's k-way levels
/// shrink by ≥ 5 % until the last one that shrinks by < 1 %, so SAT rarely has two slow
/// levels in a row. Bisections keep the 1 % rule: a larger coarsest level there makes
/// the initial portfolio slower.
const SLOW_LEVELS: usize = 2;

/// One coarsening step: the coarse hypergraph and the fine → coarse vertex map.
pub(crate) struct Level {
    pub(crate) coarse: Hypergraph,
    pub(crate) fine_to_coarse: Vec<VertexId>,
}

/// Coarsens until at most `limit` vertices remain (or coarsening stalls). `kway` (the
/// coarsening of a k-way partition, k > 2) also stops at [`SLOW_LEVELS`] slow levels in a
/// row.
pub(crate) fn coarsen(hg: &Hypergraph, limit: usize, kway: bool, rng: &mut impl Rng) -> Vec<Level> {
    let max_cluster_weight = (hg.total_weight() as f64 / limit.max(1) as f64).ceil() as i64;
    let mut levels: Vec<Level> = Vec::new();
    let mut slow_levels = 0;
    loop {
        let current = levels.last().map_or(hg, |l| &l.coarse);
        let n = current.num_vertices();
        if n <= limit {
            break;
        }
        let target = ((n as f64 / MAX_SHRINK).ceil() as usize).max(limit);
        let (cluster, clusters) = cluster_pass(current, max_cluster_weight, target, kway, rng);
        if stops(n, clusters, kway, &mut slow_levels) {
            break;
        }
        let coarse = contract(current, &cluster, clusters);
        levels.push(Level {
            coarse,
            fine_to_coarse: cluster,
        });
    }
    levels
}

/// Whether coarsening stops instead of keeping a level that shrinks `n` vertices to
/// `clusters`: it shrinks by less than 1 %, or (k-way) it is the [`SLOW_LEVELS`]-th slow
/// level in a row. `slow_levels` counts the slow levels in a row so far.
fn stops(n: usize, clusters: usize, kway: bool, slow_levels: &mut usize) -> bool {
    if clusters as f64 > n as f64 / 1.01 {
        return true;
    }
    if clusters as f64 > n as f64 / SLOW_SHRINK {
        *slow_levels += 1;
        kway && *slow_levels >= SLOW_LEVELS
    } else {
        *slow_levels = 0;
        false
    }
}

/// Vertices rated in parallel per sub-round of a clustering pass.
const SUB_ROUND: usize = 4096;

thread_local! {
    /// Per-thread sparse accumulator of ratings (dense scores, touched list).
    static RATING: RefCell<(Vec<f64>, Vec<VertexId>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Clusters under construction: union-find representatives, cluster weights (at the
/// roots), which vertices are still alone, and the number of clusters.
struct Clustering {
    rep: Vec<VertexId>,
    weight: Vec<i64>,
    singleton: Vec<bool>,
    clusters: usize,
}

impl Clustering {
    fn singletons(hg: &Hypergraph) -> Self {
        let n = hg.num_vertices();
        Self {
            rep: (0..n as VertexId).collect(),
            weight: hg.vertex_weights().to_vec(),
            singleton: vec![true; n],
            clusters: n,
        }
    }

    /// Puts singleton u (weight `cu`) into c's cluster unless that is u's own or would
    /// exceed `max_cluster_weight`; returns whether it did.
    fn join(&mut self, u: VertexId, c: VertexId, cu: i64, max_cluster_weight: i64) -> bool {
        let mut root = c;
        while self.rep[root as usize] != root {
            root = self.rep[root as usize];
        }
        if root == u || self.weight[root as usize] + cu > max_cluster_weight {
            return false;
        }
        self.rep[u as usize] = root;
        self.weight[root as usize] += cu;
        self.singleton[u as usize] = false;
        self.singleton[root as usize] = false;
        self.clusters -= 1;
        true
    }

    /// The cluster id (0..clusters, in order of first vertex) of every vertex, and the
    /// number of clusters.
    fn ids(&self) -> (Vec<VertexId>, usize) {
        let mut id = vec![u32::MAX; self.rep.len()];
        let mut next = 0u32;
        let cluster = self
            .rep
            .iter()
            .map(|&r| {
                if id[r as usize] == u32::MAX {
                    id[r as usize] = next;
                    next += 1;
                }
                id[r as usize]
            })
            .collect();
        (cluster, next as usize)
    }
}

/// Computes a clustering; returns the cluster id (0..clusters) of every vertex. In a
/// bisection's coarsening (`kway` false) twins that no rating can place are merged first
/// ([`merge_unrated_twins`]).
///
/// Parallel and deterministic: the seeded order is cut into sub-rounds; every vertex of a
/// sub-round picks its preferred cluster in parallel from the clustering at the start of
/// the sub-round, then the picks are applied in order, re-checking the weight limit
/// against the current clusters. The result does not depend on the thread count.
fn cluster_pass(
    hg: &Hypergraph,
    max_cluster_weight: i64,
    target: usize,
    kway: bool,
    rng: &mut impl Rng,
) -> (Vec<VertexId>, usize) {
    let mut order: Vec<VertexId> = (0..hg.num_vertices() as VertexId).collect();
    order.shuffle(rng);
    let mut clustering = Clustering::singletons(hg);
    if !kway {
        merge_unrated_twins(hg, max_cluster_weight, target, &mut clustering);
    }
    let lightest = lightest_pins(hg);
    for chunk in order.chunks(SUB_ROUND) {
        if clustering.clusters <= target {
            break;
        }
        let view = ClusteringView {
            rep: &clustering.rep,
            weight: &clustering.weight,
            singleton: &clustering.singleton,
            lightest: &lightest,
            max_cluster_weight,
        };
        let picks: Vec<(VertexId, VertexId)> = chunk
            .par_iter()
            .with_min_len(256)
            .filter_map(|&u| {
                if !view.singleton[u as usize] {
                    return None;
                }
                let c = preferred_cluster(hg, u, &view)?;
                Some((u, c))
            })
            .collect();
        for (u, c) in picks {
            if clustering.clusters <= target {
                break;
            }
            if clustering.singleton[u as usize] {
                clustering.join(u, c, hg.vertex_weight(u), max_cluster_weight);
            }
        }
    }
    clustering.ids()
}

/// Merges the twins that rating cannot place ([`twin_groups`] of the vertices whose nets
/// all have more than [`MAX_RATED_NET`] pins) into clusters of at most the maximum cluster
/// weight, in ascending vertex order within a group, until `target` clusters remain.
fn merge_unrated_twins(
    hg: &Hypergraph,
    max_cluster_weight: i64,
    target: usize,
    clustering: &mut Clustering,
) {
    for group in twin_groups(hg, MAX_RATED_NET) {
        let mut root = group[0];
        for &v in &group[1..] {
            if clustering.clusters <= target {
                return;
            }
            if !clustering.join(v, root, hg.vertex_weight(v), max_cluster_weight) {
                root = v;
            }
        }
    }
}

/// The two lightest pins of a net: (weight, pin) of the lightest, weight of the second.
#[derive(Clone, Copy)]
struct LightestPins {
    first: (i64, VertexId),
    second: i64,
}

impl LightestPins {
    /// The weight of the lightest pin of the net other than u.
    fn other_than(&self, u: VertexId) -> i64 {
        if self.first.1 == u {
            self.second
        } else {
            self.first.0
        }
    }
}

/// The two lightest pins of every net (computed once per level, in parallel).
fn lightest_pins(hg: &Hypergraph) -> Vec<LightestPins> {
    (0..hg.num_nets() as NetId)
        .into_par_iter()
        .with_min_len(1024)
        .map(|e| {
            let mut l = LightestPins {
                first: (i64::MAX, VertexId::MAX),
                second: i64::MAX,
            };
            for &v in hg.pins(e) {
                let w = hg.vertex_weight(v);
                if w < l.first.0 {
                    l.second = l.first.0;
                    l.first = (w, v);
                } else if w < l.second {
                    l.second = w;
                }
            }
            l
        })
        .collect()
}

/// The clustering as a sub-round's ratings see it (read-only, shared by the threads).
struct ClusteringView<'a> {
    rep: &'a [VertexId],
    weight: &'a [i64],
    singleton: &'a [bool],
    lightest: &'a [LightestPins],
    max_cluster_weight: i64,
}

/// The cluster u would join: the highest heavy-edge rating among the clusters of its
/// neighbours that stay within the weight limit; singletons win ties, then lower ids.
fn preferred_cluster(hg: &Hypergraph, u: VertexId, view: &ClusteringView<'_>) -> Option<VertexId> {
    let ClusteringView {
        rep,
        lightest,
        max_cluster_weight,
        ..
    } = *view;
    let cu = hg.vertex_weight(u);
    RATING.with(|cell| {
        let (score, touched) = &mut *cell.borrow_mut();
        if score.len() < rep.len() {
            score.resize(rep.len(), 0.0);
        }
        // Adds the rating of u's nets whose size lies in `sizes`.
        let rate = |sizes: std::ops::RangeInclusive<usize>,
                    score: &mut Vec<f64>,
                    touched: &mut Vec<VertexId>| {
            for &e in hg.incident_nets(u) {
                let size = hg.net_size(e);
                if !sizes.contains(&size) {
                    continue;
                }
                // No pin of e can take u: e rates only clusters u may not join.
                if cu.saturating_add(lightest[e as usize].other_than(u)) > max_cluster_weight {
                    continue;
                }
                let r = hg.net_weight(e) as f64 / (size - 1) as f64;
                for &v in hg.pins(e) {
                    if v == u {
                        continue;
                    }
                    let c = rep[v as usize];
                    if score[c as usize] == 0.0 {
                        touched.push(c);
                    }
                    score[c as usize] += r;
                }
            }
        };
        rate(2..=MAX_RATED_NET, score, touched);
        let mut best = best_cluster(u, cu, score, touched, view);
        if best.is_none() {
            // No net up to MAX_RATED_NET pins offers a cluster: let the larger ones speak.
            rate(MAX_RATED_NET + 1..=FALLBACK_RATED_NET, score, touched);
            best = best_cluster(u, cu, score, touched, view);
        }
        for &c in touched.iter() {
            score[c as usize] = 0.0;
        }
        touched.clear();
        best
    })
}

/// The best of the touched clusters that u may join: highest rating, then singletons,
/// then lower ids.
fn best_cluster(
    u: VertexId,
    cu: i64,
    score: &[f64],
    touched: &[VertexId],
    view: &ClusteringView<'_>,
) -> Option<VertexId> {
    let mut best: Option<(f64, bool, VertexId)> = None;
    for &c in touched {
        if c == u || view.weight[c as usize] + cu > view.max_cluster_weight {
            continue;
        }
        let key = (score[c as usize], view.singleton[c as usize]);
        let better = match best {
            None => true,
            Some((s, single, id)) => {
                key.0 > s || (key.0 == s && ((key.1 && !single) || (key.1 == single && c < id)))
            }
        };
        if better {
            best = Some((key.0, key.1, c));
        }
    }
    best.map(|b| b.2)
}

/// Contracts clusters into vertices: pins are mapped and de-duplicated, single-pin nets
/// dropped, identical nets merged with summed weights.
pub(crate) fn contract(hg: &Hypergraph, cluster: &[VertexId], clusters: usize) -> Hypergraph {
    let mut vertex_weights = vec![0i64; clusters];
    for v in 0..hg.num_vertices() {
        vertex_weights[cluster[v] as usize] += hg.vertex_weight(v as VertexId);
    }
    // Map every net in parallel (deterministic: results keep net order).
    let mapped: Vec<(u64, Vec<VertexId>)> = (0..hg.num_nets() as NetId)
        .into_par_iter()
        .with_min_len(1024)
        .map(|e| {
            let mut pins: Vec<VertexId> = hg.pins(e).iter().map(|&p| cluster[p as usize]).collect();
            pins.sort_unstable();
            pins.dedup();
            (fingerprint(&pins), pins)
        })
        .collect();
    let mut net_weights: Vec<i64> = Vec::new();
    let mut net_offsets = vec![0usize];
    let mut pins: Vec<VertexId> = Vec::new();
    let mut by_hash: HashMap<u64, Vec<u32>> = HashMap::new();
    for (e, (h, net)) in mapped.iter().enumerate() {
        if net.len() < 2 {
            continue;
        }
        let candidates = by_hash.entry(*h).or_default();
        let existing = candidates.iter().copied().find(|&c| {
            &pins[net_offsets[c as usize]..net_offsets[c as usize + 1]] == net.as_slice()
        });
        match existing {
            Some(c) => net_weights[c as usize] += hg.net_weight(e as NetId),
            None => {
                candidates.push(net_weights.len() as u32);
                net_weights.push(hg.net_weight(e as NetId));
                pins.extend_from_slice(net);
                net_offsets.push(pins.len());
            }
        }
    }
    Hypergraph::from_csr(vertex_weights, net_weights, net_offsets, pins)
}

/// A 64-bit fingerprint of a sorted pin list (FNV-1a over the ids, mixed with the length).
pub(super) fn fingerprint(pins: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ pins.len() as u64;
    for &p in pins {
        h ^= p as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::metrics;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn contraction_preserves_weight_and_km1_of_projected_partitions() {
        let hg = Hypergraph::new(
            vec![1; 6],
            vec![1, 2, 3, 4],
            vec![vec![0, 1], vec![0, 1], vec![1, 2, 3], vec![3, 4, 5]],
        )
        .unwrap();
        let cluster = vec![0, 0, 1, 1, 2, 2];
        let coarse = contract(&hg, &cluster, 3);
        assert_eq!(coarse.total_weight(), 6);
        // nets {0,1} collapse to one pin and vanish; the others stay.
        assert_eq!(coarse.num_nets(), 2);
        let coarse_parts = [0u32, 1, 1];
        let fine_parts: Vec<u32> = cluster.iter().map(|&c| coarse_parts[c as usize]).collect();
        assert_eq!(
            metrics::km1(&coarse, &coarse_parts),
            metrics::km1(&hg, &fine_parts)
        );
    }

    #[test]
    fn parallel_nets_are_merged() {
        let hg = Hypergraph::new(vec![1; 3], vec![2, 5], vec![vec![0, 1], vec![1, 0]]).unwrap();
        let c = contract(&hg, &[0, 1, 2], 3);
        assert_eq!(c.num_nets(), 1);
        assert_eq!(c.net_weights(), &[7]);
    }

    /// The rating of u without the pruning: every pin of every rated net.
    fn unpruned_preferred(
        hg: &Hypergraph,
        u: VertexId,
        max_cluster_weight: i64,
    ) -> Option<VertexId> {
        let mut score = vec![0.0f64; hg.num_vertices()];
        for &e in hg.incident_nets(u) {
            let size = hg.net_size(e);
            if (2..=MAX_RATED_NET).contains(&size) {
                for &v in hg.pins(e).iter().filter(|&&v| v != u) {
                    score[v as usize] += hg.net_weight(e) as f64 / (size - 1) as f64;
                }
            }
        }
        let cu = hg.vertex_weight(u);
        (0..hg.num_vertices() as VertexId)
            .filter(|&c| c != u && score[c as usize] > 0.0)
            .filter(|&c| hg.vertex_weight(c) + cu <= max_cluster_weight)
            .max_by(|&a, &b| {
                score[a as usize]
                    .total_cmp(&score[b as usize])
                    .then(b.cmp(&a))
            })
    }

    #[test]
    fn pruning_heavy_nets_changes_no_preferred_cluster() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for case in 0..20 {
            let n = 60;
            let nets: Vec<Vec<u32>> = (0..80)
                .map(|_| {
                    (0..rng.random_range(2..12))
                        .map(|_| rng.random_range(0..n))
                        .collect()
                })
                .collect();
            let weights: Vec<i64> = (0..n).map(|_| rng.random_range(1..10)).collect();
            let hg = Hypergraph::new(weights.clone(), vec![1; nets.len()], nets).unwrap();
            let max_cluster_weight = 10;
            let lightest = lightest_pins(&hg);
            let rep: Vec<VertexId> = (0..n).collect();
            let view = ClusteringView {
                rep: &rep,
                weight: &weights,
                singleton: &vec![true; n as usize],
                lightest: &lightest,
                max_cluster_weight,
            };
            let mut pruned_nets = 0;
            for u in 0..n {
                let cu = weights[u as usize];
                pruned_nets += hg
                    .incident_nets(u)
                    .iter()
                    .filter(|&&e| hg.net_size(e) >= 2)
                    .filter(|&&e| cu + lightest[e as usize].other_than(u) > max_cluster_weight)
                    .count();
                assert_eq!(
                    preferred_cluster(&hg, u, &view),
                    unpruned_preferred(&hg, u, max_cluster_weight),
                    "case {case}, vertex {u}"
                );
            }
            assert!(pruned_nets > 0, "case {case} prunes nothing");
        }
    }

    #[test]
    fn kway_coarsening_stops_at_the_second_slow_level_in_a_row() {
        // (n, clusters) of successive levels, as on tuning_image0_20000 (m = 1.05).
        let run = |levels: &[(usize, usize)], kway: bool| {
            let mut slow = 0;
            levels
                .iter()
                .position(|&(n, c)| stops(n, c, kway, &mut slow))
                .unwrap_or(levels.len())
        };
        let image = [
            (13921, 9562),
            (9562, 7930),
            (7930, 7418),
            (7418, 7048),
            (7048, 6751),
            (6751, 6480),
            (6480, 6300),
        ];
        assert_eq!(
            run(&image, true),
            5,
            "7048 → 6751 is slow and kept, 6751 → 6480 is dropped"
        );
        assert_eq!(run(&image, false), image.len());
        // A fast level in between resets the count; < 1 % always stops.
        let sat = [
            (3812, 3188),
            (3188, 3122),
            (3122, 2800),
            (2800, 2750),
            (2750, 2748),
        ];
        assert_eq!(run(&sat, true), 4);
        assert_eq!(run(&sat, false), 4);
    }

    #[test]
    fn kway_coarsening_is_a_prefix_of_the_full_coarsening() {
        let n = 3000u32;
        for seed in 0..3 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let nets: Vec<Vec<u32>> = (0..4000)
                .map(|_| {
                    let start = rng.random_range(0..n - 40);
                    (0..rng.random_range(2..40)).map(|i| start + i).collect()
                })
                .collect();
            let weights = (0..n)
                .map(|_| if rng.random_bool(0.7) { 9 } else { 11 })
                .collect();
            let hg = Hypergraph::new(weights, vec![1; nets.len()], nets).unwrap();
            for limit in [500, 700, 900] {
                let kway = coarsen(&hg, limit, true, &mut ChaCha8Rng::seed_from_u64(9));
                let all = coarsen(&hg, limit, false, &mut ChaCha8Rng::seed_from_u64(9));
                assert!(kway.len() <= all.len());
                for (a, b) in kway.iter().zip(&all) {
                    assert_eq!(a.fine_to_coarse, b.fine_to_coarse);
                }
            }
        }
    }

    #[test]
    fn vertices_on_large_nets_only_are_rated_with_them() {
        // Vertices 0..300 share one 300-pin net; 300 and 301 a 2-pin net.
        let nets = vec![(0..300).collect::<Vec<u32>>(), vec![300, 301], vec![0, 300]];
        let hg = Hypergraph::new(vec![1; 302], vec![1; 3], nets).unwrap();
        let lightest = lightest_pins(&hg);
        let rep: Vec<VertexId> = (0..302).collect();
        let view = ClusteringView {
            rep: &rep,
            weight: hg.vertex_weights(),
            singleton: &[true; 302],
            lightest: &lightest,
            max_cluster_weight: 2,
        };
        // 5 has only the large net: it is rated with it (ties go to the lowest id).
        assert_eq!(preferred_cluster(&hg, 5, &view), Some(0));
        // 0 has a small net: the large one is not rated.
        assert_eq!(preferred_cluster(&hg, 0, &view), Some(300));
    }

    #[test]
    fn twins_on_unrated_nets_are_merged_up_to_the_cluster_weight() {
        // Vertices 0..1500 all read nets 0 and 1 (1,500 pins, above every rating
        // threshold); 1500..1510 form a path of 2-pin nets. Only merging twins can
        // cluster the first 1,500.
        let mut nets: Vec<Vec<u32>> = vec![(0..1500).collect(), (0..1500).collect()];
        nets.extend((1500..1509).map(|i| vec![i, i + 1]));
        let hg = Hypergraph::new(vec![1; 1510], vec![1; nets.len()], nets).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (cluster, clusters) = cluster_pass(&hg, 4, 1510 * 2 / 5, false, &mut rng);
        assert!(clusters <= 1510 * 2 / 5 + 5, "{clusters} clusters");
        let mut weight = vec![0; clusters];
        for v in 0..1510 {
            weight[cluster[v] as usize] += 1;
        }
        assert!(weight.iter().all(|&w| w <= 4));
        // No cluster mixes a twin with a path vertex.
        for v in 1500..1510 {
            assert!((0..1500).all(|u| cluster[u] != cluster[v]));
        }
    }

    #[test]
    fn coarsening_respects_limit_and_cluster_weight() {
        let n = 400;
        let nets: Vec<Vec<u32>> = (0..n - 1).map(|i| vec![i, i + 1]).collect();
        let hg = Hypergraph::new(vec![1; n as usize], vec![1; nets.len()], nets).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let levels = coarsen(&hg, 40, false, &mut rng);
        let last = &levels.last().unwrap().coarse;
        assert!(last.num_vertices() < 400);
        assert_eq!(last.total_weight(), 400);
        assert!(last.vertex_weights().iter().all(|&w| w <= 10));
    }
}
