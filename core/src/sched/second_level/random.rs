//! Random (Section 6.1 baseline): each node gets a combination drawn uniformly from the
//! profiled combinations that can still be formed, the average case of task mapping.

use rand::seq::IndexedRandom;
use rand::RngCore;

use super::{MappingState, SecondLevelPolicy};
use crate::sched::settings::SchedulerSettings;

#[derive(Debug)]
struct RandomMapping;

pub(super) fn build(_: &SchedulerSettings) -> Box<dyn SecondLevelPolicy> {
    Box::new(RandomMapping)
}

impl SecondLevelPolicy for RandomMapping {
    fn place(&self, state: &mut MappingState, rng: &mut dyn RngCore) {
        let combos = state.profile.combinations(state.platform);
        // Only combinations of applications that have a share here can ever be formed.
        let mut candidates: Vec<usize> = (0..state.len())
            .flat_map(|a| state.candidates(a).iter().copied())
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        loop {
            let feasible: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&c| state.capacity(&combos[c]) > 0)
                .collect();
            let Some(&c) = feasible.choose(rng) else {
                break;
            };
            state.place(&combos[c], 1);
        }
    }
}
