//! Initial bisection by a portfolio of flat algorithms on the coarsest hypergraph
//! (partitioning.md items 7–9): greedy hypergraph growing by km1 gain, BFS growing,
//! random assignment and bin packing of connected components (largest first, the rest
//! split by BFS growing), each followed by rebalancing and label propagation. Each
//! distinct start then gets one pass of 2-way FM (with a swap allowance, see `fm`), and the
//! best half of them the remaining passes ([`SCREEN_KEEP`]); the best result wins
//! (feasible first, then km1, then balance). Runs are independent and seeded per run, so
//! they execute in parallel with rayon and stay deterministic.

use std::collections::{BinaryHeap, HashSet, VecDeque};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::staging::hypergraph::{Hypergraph, VertexId};
use crate::staging::partition::fm::{fm_refine, FmSettings};
use crate::staging::partition::label_propagation::label_propagation;
use crate::staging::partition::phg::PartitionedHypergraph;
use crate::staging::partition::rebalance::{is_balanced, rebalance};
use crate::staging::partition::seed_for;

/// Portfolios on at most this many vertices refine each distinct start once (their starts
/// are kept in memory side by side; the coarsest level of a bisection has about 100).
const DEDUP_MAX_VERTICES: usize = 20_000;

/// FM passes per portfolio run (at most; a pass that gains nothing ends the run).
const FM_PASSES: usize = 5;
/// After one FM pass on every distinct start, only this fraction of them (the best, but at
/// least [`SCREEN_MIN`]) gets the remaining passes: KaHyPar-style adaptive initial
/// partitioning, which spends its refinement on the runs that can still win. Tuned on the
/// tuning set (SAT shapes 0/1, 2,000 and 20,000 tasks, k = 16 and 64, seeds 1–3, 54 runs
/// each): against refining every start fully, keeping 0.5 / 0.25 / 0.1 gave km1 ×1.004 /
/// ×1.006 / ×1.007 (geometric mean; ×1.001 / ×1.003 / ×1.004 without the one run that
/// moved by 17 % under all three) and partitioner CPU ×0.83 / ×0.77 / ×0.74 (SAT 0 20k,
/// k = 16: ×0.86 / ×0.82 / ×0.75). A check of 0.5 on fresh seeds 4–6 (same instances,
/// 54 runs): km1 ×0.999 (worst single run ×1.033), CPU ×0.84.
const SCREEN_KEEP: f64 = 0.5;
/// Screening keeps at least this many starts.
const SCREEN_MIN: usize = 4;

/// The flat bisection algorithms of the portfolio.
#[derive(Debug, Clone, Copy)]
enum Flat {
    GreedyGrowing,
    BfsGrowing,
    Random,
    ComponentPacking,
}

/// A result of one portfolio run, ordered by quality.
struct Candidate {
    feasible: bool,
    km1: i64,
    overload: i64,
    run: usize,
    parts: Vec<u32>,
}

/// Bisects `hg` with block 0 targeting `perfect[0]` and both blocks within `max_weights`.
pub(crate) fn portfolio_bisection(
    hg: &Hypergraph,
    perfect: [i64; 2],
    max_weights: [i64; 2],
    runs: usize,
    fm_allowance: i64,
    seed: u64,
) -> Vec<u32> {
    let run_start = |run: usize| {
        let algorithm = match run % 5 {
            0 | 2 => Flat::GreedyGrowing,
            1 => Flat::BfsGrowing,
            3 => Flat::Random,
            _ => Flat::ComponentPacking,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed_for(seed, run as u64));
        let parts = match algorithm {
            Flat::GreedyGrowing => greedy_growing(hg, perfect[0], max_weights[0], &mut rng),
            Flat::BfsGrowing => bfs_growing(hg, perfect[0], &mut rng),
            Flat::Random => random_fill(hg, perfect[0], &mut rng),
            Flat::ComponentPacking => component_packing(hg, perfect, max_weights, &mut rng),
        };
        let mut phg = PartitionedHypergraph::new(hg, 2, parts);
        rebalance(&mut phg, &max_weights);
        label_propagation(&mut phg, &max_weights, 3, &mut rng);
        phg.into_parts()
    };
    // FM on one start, `passes` passes at most; also says whether the last pass still
    // improved (so more passes could).
    let refine = |run: usize, parts: Vec<u32>, passes: usize| {
        let mut phg = PartitionedHypergraph::new(hg, 2, parts);
        let before = phg.km1();
        fm_refine(
            &mut phg,
            &max_weights,
            FmSettings {
                passes,
                max_fruitless_moves: 100,
                min_relative_improvement: 0.0,
                allowance: fm_allowance,
            },
        );
        let improving = passes == 1 && phg.km1() < before;
        let feasible = is_balanced(&phg, &max_weights);
        // Excess of the heavier block over its target: among equal cuts, the most even
        // bisection leaves the most slack to the bisections below it.
        let overload = (0..2)
            .map(|b| phg.part_weight(b) - perfect[b as usize])
            .max()
            .unwrap_or(0);
        let candidate = Candidate {
            feasible,
            km1: phg.km1(),
            overload,
            run,
            parts: phg.into_parts(),
        };
        (candidate, improving)
    };
    let key = |c: &Candidate| (!c.feasible, c.km1, c.overload, c.run);
    let runs = runs.max(1);
    let best = if hg.num_vertices() <= DEDUP_MAX_VERTICES {
        // FM is deterministic, so runs whose starts coincide after label propagation end
        // identical too, and only the first of them (the lowest run) can win: refine each
        // distinct start once (on SAT 20k, k = 16, 20–40 % of the starts are repeats).
        let starts: Vec<Vec<u32>> = (0..runs).into_par_iter().map(run_start).collect();
        let mut seen = HashSet::with_capacity(runs);
        let distinct: Vec<(usize, Vec<u32>)> = starts
            .into_iter()
            .enumerate()
            .filter(|(_, parts)| seen.insert(parts.clone()))
            .collect();
        // Screening: one FM pass on every distinct start, the remaining passes only on
        // the best `SCREEN_KEEP` of them (by the same key as the final choice).
        let mut screened: Vec<(Candidate, bool)> = distinct
            .into_par_iter()
            .map(|(run, parts)| refine(run, parts, 1))
            .collect();
        screened.sort_by_key(|(c, _)| key(c));
        let keep = ((screened.len() as f64 * SCREEN_KEEP).ceil() as usize).max(SCREEN_MIN);
        let rest = screened.split_off(keep.min(screened.len()));
        let top: Vec<Candidate> = screened
            .into_par_iter()
            .map(|(c, improving)| {
                if improving {
                    refine(c.run, c.parts, FM_PASSES - 1).0
                } else {
                    c
                }
            })
            .collect();
        top.into_iter()
            .chain(rest.into_iter().map(|(c, _)| c))
            .min_by_key(key)
    } else {
        (0..runs)
            .into_par_iter()
            .map(|run| refine(run, run_start(run), FM_PASSES).0)
            .min_by_key(key)
    };
    best.expect("at least one run").parts
}

/// Greedy hypergraph growing: all vertices start in block 1; block 0 grows from a random
/// seed by always taking the vertex with the best km1 gain, until it reaches its target.
///
/// The gains of block 1's vertices are kept exact as block 0 grows: a move changes the
/// gain of a block-1 pin of net e only when e gets its first block-0 pin (each block-1 pin
/// stops paying for e entering block 0) or its last but one block-1 pin leaves (the last
/// one would now take e out of block 1). Both happen once per net, so growing costs
/// O(pins) gain updates, however large the nets are.
fn greedy_growing(hg: &Hypergraph, target0: i64, max0: i64, rng: &mut impl Rng) -> Vec<u32> {
    let n = hg.num_vertices();
    let mut phg = PartitionedHypergraph::new(hg, 2, vec![1; n]);
    let mut gain: Vec<i64> = (0..n as VertexId).map(|v| phg.gain_to(v, 0)).collect();
    let mut in_heap_gain: Vec<Option<i64>> = vec![None; n];
    let mut heap: BinaryHeap<(i64, u32)> = BinaryHeap::new();
    let mut order: Vec<VertexId> = (0..n as VertexId).collect();
    order.shuffle(rng);
    let mut next_seed = 0;
    while phg.part_weight(0) < target0 {
        let v = loop {
            match heap.pop() {
                Some((gain_in_heap, rv)) => {
                    let v = u32::MAX - rv;
                    if phg.part(v) == 0 || in_heap_gain[v as usize] != Some(gain_in_heap) {
                        continue;
                    }
                    let current = gain[v as usize];
                    debug_assert_eq!(current, phg.gain_to(v, 0), "kept gain of {v}");
                    if current != gain_in_heap {
                        in_heap_gain[v as usize] = Some(current);
                        heap.push((current, rv));
                        continue;
                    }
                    break Some(v);
                }
                None => {
                    while next_seed < n && phg.part(order[next_seed]) == 0 {
                        next_seed += 1;
                    }
                    break order.get(next_seed).copied();
                }
            }
        };
        let Some(v) = v else { break };
        if phg.part_weight(0) + hg.vertex_weight(v) > max0 {
            in_heap_gain[v as usize] = None;
            if heap.is_empty() && next_seed >= n {
                break;
            }
            if heap.is_empty() {
                next_seed += 1;
            }
            continue;
        }
        phg.move_vertex(v, 0, |_, _, _| {});
        for &e in hg.incident_nets(v) {
            let first_in_0 = phg.pin_count(e, 0) == 1;
            let last_in_1 = phg.pin_count(e, 1) == 1;
            if !(first_in_0 || last_in_1) {
                continue;
            }
            let w = hg.net_weight(e);
            for &u in hg.pins(e) {
                if phg.part(u) != 1 {
                    continue;
                }
                let g = &mut gain[u as usize];
                *g += if first_in_0 { w } else { 0 } + if last_in_1 { w } else { 0 };
                if in_heap_gain[u as usize] != Some(*g) {
                    in_heap_gain[u as usize] = Some(*g);
                    heap.push((*g, u32::MAX - u));
                }
            }
        }
    }
    phg.into_parts()
}

/// Breadth-first growing of block 0 from a random seed.
fn bfs_growing(hg: &Hypergraph, target0: i64, rng: &mut impl Rng) -> Vec<u32> {
    let n = hg.num_vertices();
    let mut parts = vec![1u32; n];
    let mut visited = vec![false; n];
    // A net's pins are all queued the first time one of them is taken: scanning it again
    // would find nothing new (and cost O(|e|²) over a large net).
    let mut net_done = vec![false; hg.num_nets()];
    let mut order: Vec<VertexId> = (0..n as VertexId).collect();
    order.shuffle(rng);
    let mut weight0 = 0;
    let mut queue = VecDeque::new();
    let mut seeds = order.into_iter();
    while weight0 < target0 {
        let v = match queue.pop_front() {
            Some(v) => v,
            None => match seeds.find(|&s| !visited[s as usize]) {
                Some(s) => {
                    visited[s as usize] = true;
                    s
                }
                None => break,
            },
        };
        parts[v as usize] = 0;
        weight0 += hg.vertex_weight(v);
        for &e in hg.incident_nets(v) {
            if std::mem::replace(&mut net_done[e as usize], true) {
                continue;
            }
            for &u in hg.pins(e) {
                if !visited[u as usize] {
                    visited[u as usize] = true;
                    queue.push_back(u);
                }
            }
        }
    }
    parts
}

/// Random assignment: a random prefix of the vertices fills block 0.
fn random_fill(hg: &Hypergraph, target0: i64, rng: &mut impl Rng) -> Vec<u32> {
    let n = hg.num_vertices();
    let mut order: Vec<VertexId> = (0..n as VertexId).collect();
    order.shuffle(rng);
    let mut parts = vec![1u32; n];
    let mut weight0 = 0;
    for v in order {
        if weight0 >= target0 {
            break;
        }
        parts[v as usize] = 0;
        weight0 += hg.vertex_weight(v);
    }
    parts
}

/// Connected components (via the nets) of `hg`: component id per vertex and the count.
pub(crate) fn components(hg: &Hypergraph) -> (Vec<u32>, usize) {
    let n = hg.num_vertices();
    let mut comp = vec![u32::MAX; n];
    let mut net_done = vec![false; hg.num_nets()];
    let mut count = 0u32;
    let mut stack = Vec::new();
    for s in 0..n {
        if comp[s] != u32::MAX {
            continue;
        }
        comp[s] = count;
        stack.push(s as VertexId);
        while let Some(v) = stack.pop() {
            for &e in hg.incident_nets(v) {
                if std::mem::replace(&mut net_done[e as usize], true) {
                    continue;
                }
                for &u in hg.pins(e) {
                    if comp[u as usize] == u32::MAX {
                        comp[u as usize] = count;
                        stack.push(u);
                    }
                }
            }
        }
        count += 1;
    }
    (comp, count as usize)
}

/// Packs whole components, heaviest first (random order among equals), into the block
/// with the most room relative to its target; a component that fits neither block is split
/// by BFS growing into the room left in block 0. Cuts nothing when the components allow a
/// balanced split, which growing from seeds often misses.
fn component_packing(
    hg: &Hypergraph,
    perfect: [i64; 2],
    max_weights: [i64; 2],
    rng: &mut impl Rng,
) -> Vec<u32> {
    let (comp, count) = components(hg);
    let mut weight = vec![0i64; count];
    for v in 0..hg.num_vertices() {
        weight[comp[v] as usize] += hg.vertex_weight(v as VertexId);
    }
    let mut order: Vec<usize> = (0..count).collect();
    order.shuffle(rng);
    order.sort_by_key(|&c| std::cmp::Reverse(weight[c]));
    let mut block_of = vec![u8::MAX; count];
    let mut load = [0i64; 2];
    let mut split = Vec::new();
    for c in order {
        let room = |b: usize| perfect[b] - load[b];
        let first = if room(0) >= room(1) { 0 } else { 1 };
        let fits = |b: usize| load[b] + weight[c] <= max_weights[b];
        let chosen = if fits(first) {
            Some(first)
        } else if fits(1 - first) {
            Some(1 - first)
        } else {
            None
        };
        match chosen {
            Some(b) => {
                block_of[c] = b as u8;
                load[b] += weight[c];
            }
            None => split.push(c),
        }
    }
    let mut parts: Vec<u32> = comp
        .iter()
        .map(|&c| u32::from(block_of[c as usize] == 1))
        .collect();
    if !split.is_empty() {
        // Grow block 0 inside the unplaced components until it reaches its target.
        let in_split: Vec<bool> = comp
            .iter()
            .map(|&c| block_of[c as usize] == u8::MAX)
            .collect();
        let (sub, ids) = hg.induced(&in_split);
        let sub_parts = bfs_growing(&sub, perfect[0] - load[0], rng);
        for (i, &v) in ids.iter().enumerate() {
            parts[v as usize] = sub_parts[i];
        }
    }
    parts
}
