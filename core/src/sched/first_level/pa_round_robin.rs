//! Platform Affinity based Round-Robin (Algorithm 2, Section 5.1.2): compute each
//! application's fair share of all cores, then let the applications take turns, each
//! taking up to D_unit cores from its highest-affinity platform that still has cores.

use rand::RngCore;

use super::{fill_leftovers, FirstLevelInput, FirstLevelPolicy};
use crate::sched::settings::SchedulerSettings;
use crate::sched::weighted_max_min::weighted_fair_share;

#[derive(Debug)]
struct PlatformAffinityRoundRobin {
    d_unit: u64,
}

pub(super) fn build(settings: &SchedulerSettings) -> Box<dyn FirstLevelPolicy> {
    Box::new(PlatformAffinityRoundRobin {
        d_unit: u64::from(settings.d_unit.max(1)),
    })
}

impl FirstLevelPolicy for PlatformAffinityRoundRobin {
    fn allocate(&self, input: &FirstLevelInput, _: &mut dyn RngCore) -> Vec<Vec<u64>> {
        let n = input.apps.len();
        let m = input.platforms.len();
        let mut alloc = vec![vec![0u64; m]; n];
        let mut free = input.capacity.clone();
        // Line 7: fair share, unneeded cores redistributed.
        let total: u64 = free.iter().sum();
        let fair = weighted_fair_share(total, &input.feasible_demand(), &input.entitlement);
        let mut missing = fair;
        // Each application's feasible platforms by decreasing affinity, with a cursor that
        // skips exhausted platforms (line 10), so a turn costs O(1) amortized.
        let orders: Vec<Vec<usize>> = (0..n).map(|a| input.platforms_by_affinity(a)).collect();
        let mut cursor = vec![0usize; n];
        let mut turn: Vec<usize> = (0..n).filter(|&a| missing[a] > 0).collect();
        // Line 8: until every fair share is handed out.
        while !turn.is_empty() {
            turn.retain(|&a| {
                while cursor[a] < orders[a].len() && free[orders[a][cursor[a]]] == 0 {
                    cursor[a] += 1;
                }
                if cursor[a] == orders[a].len() {
                    return false;
                }
                let p = orders[a][cursor[a]];
                // Line 11: d = min(D_unit, fairShare − share, avCores).
                let d = self.d_unit.min(missing[a]).min(free[p]);
                alloc[a][p] += d;
                missing[a] -= d;
                free[p] -= d;
                missing[a] > 0
            });
        }
        // A share an application could not use (its columns were full) goes to others.
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
    fn everyone_gets_the_fair_share_best_platform_first() {
        let inp = input(vec![10_000; 3], vec![300, 300]);
        let alloc = build(&SchedulerSettings::default())
            .allocate(&inp, &mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        for row in &alloc {
            assert_eq!(row.iter().sum::<u64>(), 200);
        }
        // Somebody got its whole share from its favourite platform.
        assert!(
            (0..3).any(|a| alloc[a][inp.platforms_by_affinity(a)[0]] == 200),
            "{alloc:?}"
        );
    }
}
