//! AllCore (Section 6.1 baseline): every node runs tasks of a single application, as a
//! production cluster does without knowing the other applications.

use rand::RngCore;

use super::{MappingState, SecondLevelPolicy};
use crate::sched::settings::SchedulerSettings;

#[derive(Debug)]
struct AllCore;

pub(super) fn build(_: &SchedulerSettings) -> Box<dyn SecondLevelPolicy> {
    Box::new(AllCore)
}

impl SecondLevelPolicy for AllCore {
    fn place(&self, state: &mut MappingState, _: &mut dyn RngCore) {
        for a in 0..state.len() {
            state.place_alone(a, u32::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::profile;
    use super::super::{map_platform, PlatformMapping};
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn whole_nodes_go_to_one_application() {
        let profile = profile();
        let mapping = PlatformMapping {
            profile: &profile,
            platform: 0,
            nodes: 10,
            cores_per_node: 4,
            apps: vec![0, 1],
            shares: vec![8, 6],
        };
        let groups = map_platform(
            &AllCore,
            &mapping,
            false,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(3),
        );
        assert!(groups
            .iter()
            .any(|g| g.slots == vec![(0, 4)] && g.nodes == 2));
        assert!(groups
            .iter()
            .any(|g| g.slots == vec![(1, 4)] && g.nodes == 1));
    }
}
