//! Most Affected First (Section 5.2.1, Algorithm 3): the application with the highest
//! co-runner affinity picks its fastest feasible combination and places it on as many
//! nodes as the members' shares allow; repeat. Variants: co-runner affinity recomputed
//! every iteration over the still-usable applications (line 8) or once, and pairwise
//! combinations only (Section 5.3.2).

use rand::RngCore;

use super::{MappingState, SecondLevelPolicy};
use crate::sched::affinity::CoRunnerAffinity;
use crate::sched::settings::SchedulerSettings;

#[derive(Debug)]
struct MostAffectedFirst {
    metric: CoRunnerAffinity,
    recompute: bool,
}

pub(super) fn build(settings: &SchedulerSettings) -> Box<dyn SecondLevelPolicy> {
    Box::new(MostAffectedFirst {
        metric: settings.co_runner_affinity,
        recompute: settings.recompute_co_runner_affinity,
    })
}

impl MostAffectedFirst {
    /// `U[i].CA[j]` for every open application, over combinations of open applications.
    fn affinities(&self, state: &MappingState) -> Vec<f64> {
        (0..state.len())
            .map(|a| {
                if state.done[a] {
                    return f64::NEG_INFINITY;
                }
                state
                    .co_runner_affinity(a, self.metric)
                    .unwrap_or(f64::NEG_INFINITY)
            })
            .collect()
    }
}

impl SecondLevelPolicy for MostAffectedFirst {
    fn place(&self, state: &mut MappingState, _: &mut dyn RngCore) {
        let mut affinity = self.affinities(state);
        loop {
            if self.recompute {
                affinity = self.affinities(state);
            }
            // The most affected open application (ties to the lower index).
            let Some(chosen) = state
                .open()
                .into_iter()
                .max_by(|&x, &y| affinity[x].total_cmp(&affinity[y]).then(y.cmp(&x)))
            else {
                break;
            };
            match state.best_for(chosen) {
                Some(combo) => {
                    state.place(combo, u32::MAX);
                }
                None => state.done[chosen] = true,
            }
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
    fn the_most_affected_application_avoids_its_bad_co_runner() {
        // app0 suffers 3x next to app3; MAF lets it choose first, so it never pairs with app3.
        let profile = profile();
        let mapping = PlatformMapping {
            profile: &profile,
            platform: 0,
            nodes: 20,
            cores_per_node: 4,
            apps: vec![0, 3],
            shares: vec![8, 8],
        };
        let policy = build(&SchedulerSettings::default());
        let groups = map_platform(
            policy.as_ref(),
            &mapping,
            false,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(1),
        );
        assert!(groups.iter().all(|g| g.slots.len() == 1), "{groups:?}");
    }
}
