//! Localized FM in lanes, so a large level's refinement uses two cores and still gives the
//! same partition for a seed whatever the thread count.
//!
//! The round's boundary (seeded order) is dealt out in batches: each of [`LANES`] lanes
//! gets [`SEARCHES_PER_LANE`] searches of consecutive seed groups. Lane 0 searches on the
//! partition itself; every other lane searches on its own copy, which equals the
//! partition at the start of the batch (a snapshot). The lanes run side by side. Then,
//! in lane order, each other lane's kept moves are replayed on the partition: a move is
//! skipped if its vertex was already moved this batch (by an earlier lane) or its target
//! block has no room any more, the gains are the real ones of the partition as it is
//! now, and only the best prefix of the replay is kept (the rest is rolled back, so a
//! replay never worsens km1). Finally the copies are brought back to the partition by
//! re-moving just the vertices the batch touched, and every lane marks them touched.
//!
//! This is the "searches against a snapshot, applied in a fixed order with recomputed
//! gains, improving prefixes only" scheme. It needs no locks or shared gain cache
//! (Mt-KaHyPar's non-deterministic localized FM shares the partition between threads and
//! is not reproducible; its deterministic mode uses synchronous label-propagation-like
//! rounds, which lose the local searches' ability to climb out of local optima). The
//! lane count is a constant, not the thread count: with one thread the lanes run one
//! after the other and the result is the same.

use rand::Rng;
use rayon::prelude::*;

use super::{next_seeds, round_is_last, shuffled_boundary, LocalizedFmSettings, Search};
use crate::staging::hypergraph::VertexId;
use crate::staging::partition::phg::PartitionedHypergraph;

/// Searches that run side by side (the machine this is tuned for has two cores).
const LANES: usize = 2;
/// Searches each lane runs per batch, between two merges.
const SEARCHES_PER_LANE: usize = 8;

/// Kept moves of one lane: (vertex, from, to).
type Moves = Vec<(VertexId, u32, u32)>;

/// Localized FM rounds with the searches in lanes; returns the total km1 improvement.
pub(super) fn localized_fm_in_lanes(
    phg: &mut PartitionedHypergraph<'_>,
    max_weights: &[i64],
    config: LocalizedFmSettings,
    rng: &mut impl Rng,
) -> i64 {
    let (hg, k) = (phg.hg, phg.k);
    let n = hg.num_vertices();
    let parts: Vec<u32> = (0..n as VertexId).map(|v| phg.part(v)).collect();
    let mut copies: Vec<PartitionedHypergraph<'_>> = (1..LANES)
        .map(|_| PartitionedHypergraph::new(hg, k, parts.clone()))
        .collect();
    let mut searches: Vec<Search> = (0..LANES).map(|_| Search::new(n, k)).collect();
    let mut total = 0;
    let mut km1 = phg.km1();
    for _ in 0..config.rounds {
        let boundary = shuffled_boundary(phg, rng);
        for search in &mut searches {
            search.touched.iter_mut().for_each(|t| *t = false);
        }
        let mut round = 0;
        let mut cursor = 0;
        while cursor < boundary.len() {
            let work = deal(&boundary, &mut cursor, &searches[0].touched, config);
            round += batch(phg, &mut copies, &mut searches, &work, max_weights, config);
        }
        total += round;
        if round_is_last(round, km1, config) {
            break;
        }
        km1 -= round;
    }
    total
}

/// The seed groups of one batch, per lane: dealt round-robin, one search at a time.
fn deal(
    boundary: &[VertexId],
    cursor: &mut usize,
    touched: &[bool],
    config: LocalizedFmSettings,
) -> Vec<Vec<Vec<VertexId>>> {
    let mut work = vec![Vec::new(); LANES];
    for _ in 0..SEARCHES_PER_LANE {
        for lane in work.iter_mut() {
            let seeds = next_seeds(boundary, cursor, touched, config);
            if seeds.is_empty() {
                return work;
            }
            lane.push(seeds);
        }
    }
    work
}

/// Runs one batch and merges it; returns the km1 improvement kept on `phg`.
fn batch(
    phg: &mut PartitionedHypergraph<'_>,
    copies: &mut [PartitionedHypergraph<'_>],
    searches: &mut [Search],
    work: &[Vec<Vec<VertexId>>],
    max_weights: &[i64],
    config: LocalizedFmSettings,
) -> i64 {
    let (first, others) = searches.split_at_mut(1);
    let (own, replays) = rayon::join(
        || run_lane(phg, &mut first[0], &work[0], max_weights, config, None),
        || {
            copies
                .par_iter_mut()
                .zip(others.par_iter_mut())
                .zip(work[1..].par_iter())
                .map(|((copy, search), seeds)| {
                    let mut kept = Moves::new();
                    run_lane(copy, search, seeds, max_weights, config, Some(&mut kept));
                    kept
                })
                .collect::<Vec<Moves>>()
        },
    );
    let mut gain = own;
    for moves in &replays {
        gain += replay(phg, moves, max_weights);
    }
    let mut touched: Vec<VertexId> = Vec::new();
    for search in searches.iter_mut() {
        touched.append(&mut search.newly_touched);
    }
    for copy in copies.iter_mut() {
        for &v in &touched {
            let target = phg.part(v);
            if copy.part(v) != target {
                copy.move_vertex(v, target, |_, _, _| {});
            }
        }
    }
    for search in searches.iter_mut() {
        for &v in &touched {
            search.touched[v as usize] = true;
        }
    }
    gain
}

/// One lane's searches, one after the other; returns their km1 improvement on `phg`.
fn run_lane(
    phg: &mut PartitionedHypergraph<'_>,
    search: &mut Search,
    seed_groups: &[Vec<VertexId>],
    max_weights: &[i64],
    config: LocalizedFmSettings,
    mut kept: Option<&mut Moves>,
) -> i64 {
    seed_groups
        .iter()
        .map(|seeds| {
            search.run(
                phg,
                max_weights,
                seeds,
                config.max_fruitless_moves,
                kept.as_deref_mut(),
            )
        })
        .sum()
}

/// Replays a lane's moves on `phg` with real gains; keeps the best prefix (never a loss).
fn replay(phg: &mut PartitionedHypergraph<'_>, moves: &Moves, max_weights: &[i64]) -> i64 {
    let mut applied: Vec<(VertexId, u32)> = Vec::new();
    let (mut cumulative, mut best, mut best_len) = (0i64, 0i64, 0usize);
    for &(v, from, to) in moves {
        let room = max_weights[to as usize] - phg.part_weight(to) - phg.hg.vertex_weight(v);
        if phg.part(v) != from || room < 0 {
            continue;
        }
        cumulative += phg.move_vertex(v, to, |_, _, _| {});
        applied.push((v, from));
        if cumulative > best {
            best = cumulative;
            best_len = applied.len();
        }
    }
    for &(v, from) in applied[best_len..].iter().rev() {
        phg.move_vertex(v, from, |_, _, _| {});
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::hypergraph::Hypergraph;
    use crate::staging::metrics;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// A ring of 6,000 vertices in 60 groups with group nets and ring nets, started from a
    /// partition that cuts every group: many independent local improvements.
    fn instance() -> (Hypergraph, Vec<u32>) {
        let n = 6_000u32;
        let mut nets: Vec<Vec<u32>> = (0..n).map(|v| vec![v, (v + 1) % n]).collect();
        nets.extend((0..n / 4).map(|g| (4 * g..4 * g + 4).collect()));
        let hg = Hypergraph::new(vec![1; n as usize], vec![1; nets.len()], nets).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let parts = (0..n).map(|_| rng.random_range(0..4)).collect();
        (hg, parts)
    }

    fn run(threads: usize) -> (Vec<u32>, i64, i64) {
        let (hg, parts) = instance();
        let mut phg = PartitionedHypergraph::new(&hg, 4, parts);
        let before = phg.km1();
        let max = vec![1_650; 4];
        let config = LocalizedFmSettings {
            rounds: 4,
            seeds_per_search: 10,
            max_fruitless_moves: 10,
            min_relative_improvement: 0.0,
        };
        let gain = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                let mut rng = ChaCha8Rng::seed_from_u64(9);
                localized_fm_in_lanes(&mut phg, &max, config, &mut rng)
            });
        assert!(phg.part_weights().iter().all(|&w| w <= 1_650));
        assert_eq!(phg.km1(), before - gain);
        let parts: Vec<u32> = (0..hg.num_vertices() as VertexId)
            .map(|v| phg.part(v))
            .collect();
        assert_eq!(phg.km1(), metrics::km1(&hg, &parts));
        (parts, before, phg.km1())
    }

    #[test]
    fn lanes_improve_exactly_and_do_not_depend_on_the_thread_count() {
        let (one, before, after) = run(1);
        assert!(after * 2 < before, "km1 {before} -> {after}");
        let (two, _, after_two) = run(2);
        assert_eq!((one, after), (two, after_two));
    }

    #[test]
    fn a_replay_keeps_only_its_best_prefix_and_skips_stale_moves() {
        // Path 0-1-2-3, nets {0,1} w 5, {1,2} w 1, {2,3} w 5; parts 0 0 1 1.
        let hg = Hypergraph::new(
            vec![1; 4],
            vec![5, 1, 5],
            vec![vec![0, 1], vec![1, 2], vec![2, 3]],
        )
        .unwrap();
        let mut phg = PartitionedHypergraph::new(&hg, 2, vec![0, 0, 1, 1]);
        let max = [4, 4];
        // Moving 1 to block 1 loses 4 (and is the only real move); vertex 3 is not in
        // block 0 any more, so its move is stale and skipped.
        let gain = replay(&mut phg, &vec![(3, 0, 1), (1, 0, 1)], &max);
        assert_eq!(gain, 0);
        assert_eq!(phg.km1(), 1);
        assert_eq!(
            (0..4).map(|v| phg.part(v)).collect::<Vec<_>>(),
            [0, 0, 1, 1]
        );
    }
}
