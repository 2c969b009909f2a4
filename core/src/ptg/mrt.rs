//! Moldable-job scheduling for CAFM (§4.4): the 3/2 + ε dual approximation of Mounié,
//! Rapine and Trystram ([12] in the paper; SIAM J. Comput. 37(2), 2007) that gives an
//! estimate of the optimal makespan `C*max` and an allocation per job, and the K-shelf
//! packing of Dutot, Eyraud, Mounié and Trystram ([11], SPAA 2004) with unit weights.
//!
//! A job is given by its times on `1..=P` processors, non-increasing (the monotone
//! envelope of a PTG's HCPA profile). `γ(j, t)` is the fewest processors on which job `j`
//! takes at most `t`.
//!
//! **Dual approximation.** For a guess `d`: jobs with `t_j(1) ≤ d/2` are *small* and run
//! on one processor (their work `W_s`). Every other job needs `γ(j, d)` (else `d` is
//! rejected); it goes to the first shelf (height `d`, `γ(j, d)` processors) or to the
//! second (height `d/2`, `γ(j, d/2)` processors; a job without `γ(j, d/2)` must go to the
//! first). A knapsack of capacity `P` over the first shelf's processors chooses the jobs
//! that save the most work `W(j, γ(j, d/2)) − W(j, γ(j, d))` by going there, and `d` is
//! accepted iff the total work of both shelves fits: `W(S1) + W(S2) ≤ P·d − W_s`. A
//! binary search finds the smallest accepted `d` to a relative precision ε.

use serde::{Deserialize, Serialize};

/// `γ(t)` for a job whose time on `p` processors is `times[p − 1]` (non-increasing).
pub fn fewest_processors_within(times: &[f64], deadline: f64) -> Option<u32> {
    let k = times.partition_point(|&t| t > deadline);
    (k < times.len()).then_some(k as u32 + 1)
}

/// `W(j, p) = p · t_j(p)`.
fn work(times: &[f64], processors: u32) -> f64 {
    processors as f64 * times[processors as usize - 1]
}

/// Where the dual approximation puts a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shelf {
    /// The first shelf, of height `d`.
    First,
    /// The second shelf, of height `d/2`.
    Second,
    /// A small job (`t_j(1) ≤ d/2`), sequential.
    Small,
}

/// The dual approximation's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DualApproximation {
    /// The smallest accepted guess `d`: the estimate of `C*max` (the optimum is at least
    /// `d/(1 + ε)` when `d` is above the lower bounds, and a schedule of length `3d/2`
    /// exists).
    pub makespan: f64,
    /// Each job's allocation: `γ(j, d)`, `γ(j, d/2)` or 1 by its shelf.
    pub allocation: Vec<u32>,
    /// Each job's shelf.
    pub shelves: Vec<Shelf>,
}

/// 0/1 knapsack by dynamic programming: the items (`sizes`, `values`) that fit in
/// `capacity` with the largest total value, and among those the smallest total size.
/// Returns whether each item is taken.
pub fn knapsack(sizes: &[u32], values: &[f64], capacity: u32) -> Vec<bool> {
    let cap = capacity as usize;
    let n = sizes.len();
    // best[c] = (value, size) of the best subset of the items seen so far within c.
    let mut best = vec![(0.0f64, 0u32); cap + 1];
    let mut take = vec![vec![false; cap + 1]; n];
    let better = |a: (f64, u32), b: (f64, u32)| {
        let tol = 1e-12 * a.0.abs().max(b.0.abs()).max(1.0);
        a.0 > b.0 + tol || ((a.0 - b.0).abs() <= tol && a.1 < b.1)
    };
    for j in 0..n {
        let s = sizes[j] as usize;
        if s > cap {
            continue;
        }
        for c in (s..=cap).rev() {
            let (v, used) = best[c - s];
            let candidate = (v + values[j], used + sizes[j]);
            if better(candidate, best[c]) {
                best[c] = candidate;
                take[j][c] = true;
            }
        }
    }
    let mut chosen = vec![false; n];
    let mut c = cap;
    for j in (0..n).rev() {
        if take[j][c] {
            chosen[j] = true;
            c -= sizes[j] as usize;
        }
    }
    chosen
}

/// The dual test for guess `d`: an allocation and shelves if `d` is accepted.
fn try_guess(jobs: &[&[f64]], processors: u32, d: f64) -> Option<(Vec<u32>, Vec<Shelf>)> {
    let n = jobs.len();
    let mut allocation = vec![1u32; n];
    let mut shelves = vec![Shelf::Small; n];
    let mut small_work = 0.0;
    let mut forced_capacity = 0u32;
    let mut optional = Vec::new(); // (job, γ(j, d), γ(j, d/2))
    for (j, times) in jobs.iter().enumerate() {
        if times[0] <= d / 2.0 {
            small_work += times[0];
            continue;
        }
        let in_first = fewest_processors_within(times, d)?;
        match fewest_processors_within(times, d / 2.0) {
            None => {
                forced_capacity += in_first;
                allocation[j] = in_first;
                shelves[j] = Shelf::First;
            }
            Some(in_second) => optional.push((j, in_first, in_second)),
        }
    }
    if forced_capacity > processors {
        return None;
    }
    let sizes: Vec<u32> = optional.iter().map(|o| o.1).collect();
    let saved: Vec<f64> = optional
        .iter()
        .map(|&(j, first, second)| (work(jobs[j], second) - work(jobs[j], first)).max(0.0))
        .collect();
    let to_first = knapsack(&sizes, &saved, processors - forced_capacity);
    for (k, &(j, first, second)) in optional.iter().enumerate() {
        if to_first[k] {
            allocation[j] = first;
            shelves[j] = Shelf::First;
        } else {
            allocation[j] = second;
            shelves[j] = Shelf::Second;
        }
    }
    let shelf_work: f64 = (0..n)
        .filter(|&j| shelves[j] != Shelf::Small)
        .map(|j| work(jobs[j], allocation[j]))
        .sum();
    (shelf_work <= processors as f64 * d - small_work).then_some((allocation, shelves))
}

/// The dual approximation on `processors` processors, to relative precision `epsilon`.
pub fn dual_approximation(jobs: &[&[f64]], processors: u32, epsilon: f64) -> DualApproximation {
    assert!(processors >= 1 && !jobs.is_empty());
    let m = processors as f64;
    // Lower bounds: the longest job on all processors, the least total work over P.
    let longest = jobs.iter().map(|t| t[t.len() - 1]).fold(0.0, f64::max);
    let least_work: f64 = jobs
        .iter()
        .map(|t| {
            (1..=t.len() as u32)
                .map(|p| work(t, p))
                .fold(f64::INFINITY, f64::min)
        })
        .sum();
    let mut low = longest.max(least_work / m);
    // Accepted for sure: every job small, and their work fits in P·d.
    let sequential: f64 = jobs.iter().map(|t| t[0]).sum();
    let longest_sequential = jobs.iter().map(|t| t[0]).fold(0.0, f64::max);
    let mut high = (2.0 * longest_sequential).max(sequential / m).max(low);
    let mut accepted = try_guess(jobs, processors, high).expect("the upper bound is accepted");
    if let Some(at_low) = try_guess(jobs, processors, low) {
        return DualApproximation {
            makespan: low,
            allocation: at_low.0,
            shelves: at_low.1,
        };
    }
    while high - low > epsilon * low {
        let mid = 0.5 * (low + high);
        match try_guess(jobs, processors, mid) {
            Some(a) => {
                high = mid;
                accepted = a;
            }
            None => low = mid,
        }
    }
    DualApproximation {
        makespan: high,
        allocation: accepted.0,
        shelves: accepted.1,
    }
}

/// One shelf of a K-shelf schedule: its length and its jobs with their allocations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShelfContent {
    /// The shelf's length `L_k`.
    pub length: f64,
    /// `(job, processors)`: each job in the shelf takes at most `L_k` on its processors.
    pub jobs: Vec<(usize, u32)>,
}

/// The K-shelf packing of Dutot et al. ([11]) as CAFM_K_SHELVES uses it (§4.4): shelves of
/// increasing lengths `L_k = d / 2^{K−k}`, `k = 1..K`, where `d` is the dual
/// approximation's `C*max` estimate and `K = ⌊log₂(d / t_min)⌋ + 1` with `t_min` the
/// smallest time of any job on all processors (so the first shelf holds at least that
/// job). Shelves are filled from the shortest: a knapsack (unit weights, §4.4: "the
/// weights of all the jobs are equal to 1") packs as many of the remaining jobs as fit in
/// `P` processors, each at `γ(j, L_k)`. Jobs left after the last shelf go to further
/// shelves of length `d`. Shelves are never shuffled.
pub fn k_shelves(jobs: &[&[f64]], processors: u32, makespan_estimate: f64) -> Vec<ShelfContent> {
    let shortest = jobs
        .iter()
        .map(|t| t[t.len() - 1])
        .fold(f64::INFINITY, f64::min);
    let longest = jobs.iter().map(|t| t[t.len() - 1]).fold(0.0, f64::max);
    let d = makespan_estimate.max(longest);
    let count = if shortest > 0.0 {
        (d / shortest).log2().floor().max(0.0) as u32 + 1
    } else {
        1
    };
    let mut remaining: Vec<usize> = (0..jobs.len()).collect();
    let mut shelves = Vec::new();
    let mut k = 1;
    while !remaining.is_empty() {
        let length = if k <= count {
            d / 2f64.powi((count - k) as i32)
        } else {
            d
        };
        k += 1;
        let fitting: Vec<(usize, u32)> = remaining
            .iter()
            .filter_map(|&j| fewest_processors_within(jobs[j], length).map(|p| (j, p)))
            .collect();
        let sizes: Vec<u32> = fitting.iter().map(|f| f.1).collect();
        let chosen = knapsack(&sizes, &vec![1.0; fitting.len()], processors);
        let packed: Vec<(usize, u32)> = fitting
            .iter()
            .zip(&chosen)
            .filter(|(_, &c)| c)
            .map(|(&f, _)| f)
            .collect();
        remaining.retain(|j| !packed.iter().any(|p| p.0 == *j));
        if !packed.is_empty() {
            shelves.push(ShelfContent {
                length,
                jobs: packed,
            });
        }
    }
    shelves
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Times of a perfectly parallel job of `work` on 1..=m processors.
    fn parallel(work: f64, m: u32) -> Vec<f64> {
        (1..=m).map(|p| work / p as f64).collect()
    }

    #[test]
    fn gamma_is_the_fewest_processors_within_a_deadline() {
        let t = parallel(12.0, 4); // 12, 6, 4, 3
        assert_eq!(fewest_processors_within(&t, 12.0), Some(1));
        assert_eq!(fewest_processors_within(&t, 5.0), Some(3));
        assert_eq!(fewest_processors_within(&t, 2.9), None);
    }

    #[test]
    fn knapsack_maximizes_value_then_minimizes_size() {
        assert_eq!(
            knapsack(&[3, 4, 2], &[4.0, 5.0, 3.0], 5),
            vec![true, false, true],
            "3 + 2 fits with value 7 > 5"
        );
        // Unit weights: the most items, then the fewest processors.
        assert_eq!(
            knapsack(&[4, 1, 3, 2], &[1.0; 4], 6),
            vec![false, true, true, true]
        );
        assert_eq!(knapsack(&[7], &[1.0], 6), vec![false]);
    }

    #[test]
    fn perfectly_parallel_jobs_get_the_area_bound() {
        // Two perfectly parallel jobs of work 8 on 4 processors: the optimum is 4 (both on
        // 2 processors side by side, or one after the other on 4).
        let a = parallel(8.0, 4);
        let b = parallel(8.0, 4);
        let r = dual_approximation(&[&a, &b], 4, 1e-4);
        assert!((r.makespan - 4.0).abs() < 1e-3, "{r:?}");
        let total: f64 = r
            .allocation
            .iter()
            .zip([&a, &b])
            .map(|(&p, t)| p as f64 * t[p as usize - 1])
            .sum();
        assert!(total <= 4.0 * r.makespan + 1e-9);
    }

    #[test]
    fn a_rigid_long_job_forces_the_guess_up() {
        // A sequential job of 10 (no speedup) and a parallel one of work 8, on 4.
        let rigid = vec![10.0; 4];
        let par = parallel(8.0, 4);
        let r = dual_approximation(&[&rigid, &par], 4, 1e-4);
        assert!(r.makespan >= 10.0 && r.makespan < 10.01, "{r:?}");
        // d = 10 is accepted at once: the rigid job has no γ(d/2), so it takes 1 processor
        // in the first shelf; the parallel one saves no work in the first shelf, so it goes
        // to the second on γ(5) = 2 processors.
        assert_eq!(r.allocation[1], 2);
        assert_eq!(r.allocation[0], 1);
        assert_eq!(r.shelves[0], Shelf::First);
    }

    #[test]
    fn shelves_grow_and_short_jobs_go_first() {
        // d = 16, jobs of 1 (on all 4 processors), 4 and 16 (perfectly parallel works 4,
        // 16, 64 on 4 processors): t_min = 1, K = ⌊log2 16⌋ + 1 = 5: lengths 1, 2, 4, 8, 16.
        let jobs = [parallel(4.0, 4), parallel(16.0, 4), parallel(64.0, 4)];
        let refs: Vec<&[f64]> = jobs.iter().map(|j| j.as_slice()).collect();
        let s = k_shelves(&refs, 4, 16.0);
        let lengths: Vec<f64> = s.iter().map(|s| s.length).collect();
        // Shelf 1 (1): job 0 on 4. Shelves 2 (2) and 4 (8) stay empty: job 1 needs 4
        // processors for 4, job 2 needs 4 for 16. Empty shelves are dropped.
        assert_eq!(lengths, vec![1.0, 4.0, 16.0]);
        assert_eq!(s[0].jobs, vec![(0, 4)]);
        assert_eq!(s[1].jobs, vec![(1, 4)]);
        assert_eq!(s[2].jobs, vec![(2, 4)]);
        // On 8 processors every job is placed once and no shelf is overfull.
        let jobs8 = [parallel(4.0, 8), parallel(16.0, 8), parallel(64.0, 8)];
        let refs8: Vec<&[f64]> = jobs8.iter().map(|j| j.as_slice()).collect();
        let s8 = k_shelves(&refs8, 8, 8.0);
        assert!(s8
            .iter()
            .all(|shelf| shelf.jobs.iter().map(|j| j.1).sum::<u32>() <= 8));
        let placed: usize = s8.iter().map(|s| s.jobs.len()).sum();
        assert_eq!(placed, 3);
    }
}
