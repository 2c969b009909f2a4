//! Fairness (Section 6.1 baseline): every application gets an equal (entitlement-weighted)
//! number of cores, spread over the platforms in proportion to their size, so each
//! platform is shared equally; cores an application does not need go to the others.

use rand::RngCore;

use super::{fill_leftovers, FirstLevelInput, FirstLevelPolicy};
use crate::sched::settings::SchedulerSettings;
use crate::sched::weighted_max_min::weighted_fair_share;

#[derive(Debug)]
struct Fairness;

pub(super) fn build(_: &SchedulerSettings) -> Box<dyn FirstLevelPolicy> {
    Box::new(Fairness)
}

impl FirstLevelPolicy for Fairness {
    fn allocate(&self, input: &FirstLevelInput, _: &mut dyn RngCore) -> Vec<Vec<u64>> {
        let n = input.apps.len();
        let m = input.platforms.len();
        let total: u64 = input.capacity.iter().sum();
        let target = weighted_fair_share(total, &input.feasible_demand(), &input.entitlement);
        let mut alloc = vec![vec![0u64; m]; n];
        let mut missing = target.clone();
        let mut free = input.capacity.clone();
        if total == 0 {
            return alloc;
        }
        // Each application's target, split over the platforms it can run on in proportion
        // to their cores; the floors always fit, the remainders are placed below.
        let reach: Vec<u64> = (0..n)
            .map(|a| {
                (0..m)
                    .filter(|&p| input.feasible[a][p])
                    .map(|p| input.capacity[p])
                    .sum()
            })
            .collect();
        for p in 0..m {
            for a in 0..n {
                if !input.feasible[a][p] || reach[a] == 0 {
                    continue;
                }
                let ideal = target[a] as u128 * input.capacity[p] as u128 / reach[a] as u128;
                let give = (ideal as u64).min(missing[a]).min(free[p]);
                alloc[a][p] += give;
                missing[a] -= give;
                free[p] -= give;
            }
        }
        // Rounding leftovers: each application takes them from the platforms it can run on
        // with the most free cores, one at a time, in turn.
        loop {
            let mut progressed = false;
            for a in 0..n {
                if missing[a] == 0 {
                    continue;
                }
                if let Some(p) = (0..m)
                    .filter(|&p| free[p] > 0 && input.feasible[a][p])
                    .max_by_key(|&p| (free[p], std::cmp::Reverse(p)))
                {
                    alloc[a][p] += 1;
                    missing[a] -= 1;
                    free[p] -= 1;
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
        }
        // A target an application could not reach (its platforms were full) goes to others.
        fill_leftovers(input, &mut alloc);
        alloc
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::input;
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn platforms_are_split_equally() {
        let inp = input(vec![10_000; 4], vec![600, 600]);
        let alloc = Fairness.allocate(&inp, &mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        assert!(alloc.iter().all(|r| r == &vec![150, 150]), "{alloc:?}");
    }

    #[test]
    fn small_demand_frees_cores_for_others() {
        let inp = input(vec![100, 10_000, 10_000], vec![600, 600]);
        let alloc = Fairness.allocate(&inp, &mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        assert_eq!(alloc[0].iter().sum::<u64>(), 100);
        assert_eq!(alloc[1].iter().sum::<u64>(), 550);
        assert_eq!(alloc[2].iter().sum::<u64>(), 550);
    }
}
