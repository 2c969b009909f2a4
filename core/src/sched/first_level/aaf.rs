//! Application Affinity First (Section 5.1.1): each application favors the top k% of the
//! platforms by its own platform affinity.

use rand::RngCore;

use super::affinity_first::{allocate, AffinityFirstState};
use super::{FirstLevelInput, FirstLevelPolicy};
use crate::sched::settings::SchedulerSettings;

#[derive(Debug)]
struct ApplicationAffinityFirst {
    top_k_percent: u32,
}

pub(super) fn build(settings: &SchedulerSettings) -> Box<dyn FirstLevelPolicy> {
    Box::new(ApplicationAffinityFirst {
        top_k_percent: settings.top_k_percent,
    })
}

impl FirstLevelPolicy for ApplicationAffinityFirst {
    fn allocate(&self, input: &FirstLevelInput, _: &mut dyn RngCore) -> Vec<Vec<u64>> {
        allocate(input, |state: &AffinityFirstState| {
            let mut z = vec![vec![false; input.platforms.len()]; input.apps.len()];
            let open = state.open_platforms();
            let top = open.len() * self.top_k_percent as usize / 100;
            for a in state.needy() {
                let ranked = input
                    .platforms_by_affinity(a)
                    .into_iter()
                    .filter(|&p| state.free[p] > 0);
                for p in ranked.take(top) {
                    z[a][p] = true;
                }
            }
            z
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::input;
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn applications_start_on_their_best_platforms() {
        let inp = input(vec![100; 3], vec![600, 600, 600, 600]);
        let alloc = build(&SchedulerSettings::default())
            .allocate(&inp, &mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        for a in 0..3 {
            let best = inp.platforms_by_affinity(a)[0];
            assert_eq!(alloc[a][best], 100, "app {a}: {alloc:?}");
        }
    }
}
