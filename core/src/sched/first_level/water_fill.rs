//! Max-min water-filling on normalized throughput (beyond the paper): the application
//! whose speed-weighted cores per entitlement are lowest takes the next D_unit cores from
//! its highest-affinity platform with free cores.
//!
//! An application's throughput normalized to Fastest-OneCore (Section 3) is, ignoring
//! co-runners, Σ_p cores[a][p] · speed[a][p] / k with speed = fastest runtime / runtime.
//! PA-based RR equalizes core *counts*, so an application whose turns land on slow
//! platforms ends up behind; this policy equalizes the *speed-weighted* counts instead,
//! which is what the fairness metric measures, and keeps PA-based RR's affinity ranking
//! for where the cores come from, so efficiency stays about the same.
//!
//! The metric is over each application's whole life, so the level compared is the
//! *projected* lifetime throughput: with `e` speed-weighted cores, an application that has
//! finished `done` tasks in `age` seconds and has `rem` left ends at
//! `(done + rem) · t_min / (age + rem · t_min / e)` (in Fastest-OneCore core units, `t_min`
//! its fastest runtime). For a fresh submission this is just `e`; later it favours the
//! applications that have fallen behind.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rand::RngCore;

use super::{FirstLevelInput, FirstLevelPolicy};
use crate::sched::settings::SchedulerSettings;

#[derive(Debug)]
struct MaxMinWaterFill {
    d_unit: u64,
}

pub(super) fn build(settings: &SchedulerSettings) -> Box<dyn FirstLevelPolicy> {
    Box::new(MaxMinWaterFill {
        d_unit: u64::from(settings.d_unit.max(1)),
    })
}

/// Heap key: normalized level (lower first), then index.
#[derive(Debug, PartialEq)]
struct Level(f64, usize);

impl Eq for Level {}

impl PartialOrd for Level {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Level {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

impl FirstLevelPolicy for MaxMinWaterFill {
    fn uses_speed(&self) -> bool {
        true
    }

    fn allocate(&self, input: &FirstLevelInput, _: &mut dyn RngCore) -> Vec<Vec<u64>> {
        let n = input.apps.len();
        let m = input.platforms.len();
        let mut alloc = vec![vec![0u64; m]; n];
        let mut free = input.capacity.clone();
        let mut missing = input.demand.clone();
        let orders: Vec<Vec<usize>> = (0..n).map(|a| input.platforms_by_affinity(a)).collect();
        let mut cursor = vec![0usize; n];
        let mut effective = vec![0.0f64; n];
        // Projected lifetime throughput with `e` speed-weighted cores, per entitlement.
        let level = |a: usize, e: f64| -> f64 {
            if e <= 0.0 {
                return 0.0;
            }
            let t_min = input.fastest_runtime[a];
            let rem = input.demand[a] as f64;
            let total = input.completed_tasks[a] as f64 + rem;
            total * t_min / (input.age_s[a] + rem * t_min / e) / input.entitlement[a]
        };
        let mut heap: BinaryHeap<Reverse<Level>> = (0..n)
            .filter(|&a| missing[a] > 0)
            .map(|a| Reverse(Level(0.0, a)))
            .collect();
        while let Some(Reverse(Level(_, a))) = heap.pop() {
            while cursor[a] < orders[a].len() && free[orders[a][cursor[a]]] == 0 {
                cursor[a] += 1;
            }
            if cursor[a] == orders[a].len() {
                // No platform it can run on has free cores left; others may still have some.
                continue;
            }
            let p = orders[a][cursor[a]];
            let d = self.d_unit.min(missing[a]).min(free[p]);
            alloc[a][p] += d;
            missing[a] -= d;
            free[p] -= d;
            effective[a] += d as f64 * input.speed[a][p];
            if missing[a] > 0 {
                heap.push(Reverse(Level(level(a, effective[a]), a)));
            }
        }
        alloc
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::input;
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn slow_applications_get_more_cores() {
        let mut inp = input(vec![10_000; 2], vec![100, 100]);
        // Both prefer platform 0; application 1 is 4x slower on platform 1.
        inp.affinity = vec![vec![2.0, 1.0], vec![2.0, 1.0]];
        inp.speed = vec![vec![1.0, 1.0], vec![1.0, 0.25]];
        let alloc = build(&SchedulerSettings::default())
            .allocate(&inp, &mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        let eff =
            |a: usize| alloc[a][0] as f64 * inp.speed[a][0] + alloc[a][1] as f64 * inp.speed[a][1];
        assert_eq!(alloc.iter().flatten().sum::<u64>(), 200);
        assert!((eff(0) - eff(1)).abs() <= 2.0, "{alloc:?}");
    }

    #[test]
    fn applications_that_fell_behind_catch_up() {
        let mut inp = input(vec![1_000; 2], vec![100]);
        inp.affinity = vec![vec![1.0], vec![1.0]];
        inp.speed = vec![vec![1.0], vec![1.0]];
        // Both have run for an hour; application 0 finished far fewer tasks.
        inp.age_s = vec![3600.0, 3600.0];
        inp.completed_tasks = vec![10, 500];
        let alloc = build(&SchedulerSettings::default())
            .allocate(&inp, &mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        assert_eq!(alloc[0][0] + alloc[1][0], 100);
        assert!(alloc[0][0] > alloc[1][0], "{alloc:?}");
    }
}
