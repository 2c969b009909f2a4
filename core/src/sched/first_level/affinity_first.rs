//! Algorithm 1 (Affinity First, Section 5.1.1), shared by PAF and AAF: mark favored
//! (application, platform) pairs, then split each platform's free cores equally among the
//! applications that favor it, neediest-last and best-platform-first, and repeat while
//! cores and demand remain. The policies differ only in how they mark favored pairs.

use crate::sched::first_level::FirstLevelInput;

/// The loop state a favored-pair selection may look at.
pub(super) struct AffinityFirstState<'a> {
    pub(crate) input: &'a FirstLevelInput,
    /// Cores still needed per application: `U[i].task − Sum(U[i].share)`.
    pub(crate) unmet: Vec<u64>,
    /// Cores still free per platform: `P[j].avCores`.
    pub(crate) free: Vec<u64>,
    /// Which round of the while loop (0 = first).
    pub(crate) round: usize,
}

impl AffinityFirstState<'_> {
    pub(crate) fn needy(&self) -> Vec<usize> {
        (0..self.unmet.len())
            .filter(|&a| self.unmet[a] > 0)
            .collect()
    }

    pub(crate) fn open_platforms(&self) -> Vec<usize> {
        (0..self.free.len()).filter(|&p| self.free[p] > 0).collect()
    }

    /// Whether some application with unmet demand can run on a column with free cores.
    fn work_left(&self) -> bool {
        self.needy().into_iter().any(|a| {
            self.open_platforms()
                .into_iter()
                .any(|p| self.input.feasible[a][p])
        })
    }
}

/// Run Algorithm 1 with `favor` as line 8 (it returns the favored matrix Z[a][p]).
pub(super) fn allocate(
    input: &FirstLevelInput,
    favor: impl Fn(&AffinityFirstState) -> Vec<Vec<bool>>,
) -> Vec<Vec<u64>> {
    let n = input.apps.len();
    let m = input.platforms.len();
    let mut alloc = vec![vec![0u64; m]; n];
    let mut state = AffinityFirstState {
        input,
        unmet: input.demand.clone(),
        free: input.capacity.clone(),
        round: 0,
    };
    // Line 7: while cores are free and some application needs more (and can run there).
    while state.work_left() {
        // Line 8: favored pairs (never one that cannot run); line 9: if none, fall back to
        // median-affinity users.
        let mut favored = favor(&state);
        for (row, feasible) in favored.iter_mut().zip(&input.feasible) {
            for (z, &ok) in row.iter_mut().zip(feasible) {
                *z &= ok;
            }
        }
        if !favored.iter().flatten().any(|&z| z) {
            favored = median_fallback(&state);
        }
        // Line 10: S[j] = users assigned to platform j (here: their total entitlement).
        let mut weight_on: Vec<f64> = (0..m)
            .map(|p| {
                (0..n)
                    .filter(|&a| favored[a][p])
                    .map(|a| input.entitlement[a])
                    .sum()
            })
            .collect();
        let mut count_on: Vec<usize> = (0..m)
            .map(|p| (0..n).filter(|&a| favored[a][p]).count())
            .collect();
        // Line 11: applications in increasing order of unmet demand.
        let mut order: Vec<usize> = state.needy();
        order.sort_by_key(|&a| (state.unmet[a], a));
        let mut progressed = false;
        for a in order {
            // Line 12: platforms in decreasing affinity for this application.
            for p in input.platforms_by_affinity(a) {
                if !favored[a][p] {
                    continue;
                }
                // Line 14: d = min(unmet, avCores / S[j]) (entitlement-weighted).
                let portion = if count_on[p] == 1 {
                    state.free[p]
                } else {
                    (state.free[p] as f64 * input.entitlement[a] / weight_on[p]).floor() as u64
                };
                let d = state.unmet[a].min(portion);
                // Line 15.
                favored[a][p] = false;
                count_on[p] -= 1;
                weight_on[p] -= input.entitlement[a];
                // Lines 16-17.
                alloc[a][p] += d;
                state.unmet[a] -= d;
                state.free[p] -= d;
                progressed |= d > 0;
            }
        }
        state.round += 1;
        if !progressed {
            // Only possible when every favored pair got 0 cores; the fallback assigns
            // whole platforms, so the next round always progresses. Guard anyway.
            let fallback = median_fallback(&state);
            if !fallback.iter().flatten().any(|&z| z) {
                break;
            }
        }
    }
    alloc
}

/// Line 9 (Section 5.3.1): each platform with free cores goes to the needy applications
/// whose affinity to it is at least the median over the needy applications that can run
/// there.
fn median_fallback(state: &AffinityFirstState) -> Vec<Vec<bool>> {
    let input = state.input;
    let n = input.apps.len();
    let m = input.platforms.len();
    let mut z = vec![vec![false; m]; n];
    for p in state.open_platforms() {
        let needy: Vec<usize> = state
            .needy()
            .into_iter()
            .filter(|&a| input.feasible[a][p])
            .collect();
        if needy.is_empty() {
            continue;
        }
        let mut values: Vec<f64> = needy.iter().map(|&a| input.affinity[a][p]).collect();
        values.sort_by(|x, y| x.total_cmp(y));
        let median = values[(values.len() - 1) / 2];
        for &a in &needy {
            if input.affinity[a][p] >= median {
                z[a][p] = true;
            }
        }
    }
    z
}
