//! Provider Affinity First (Section 5.1.1): each platform favors the top k% of the
//! applications by platform affinity, and keeps the applications it served in the previous
//! round (stickiness: "a user continuously executes its tasks on a previously assigned
//! platform").

use rand::RngCore;

use super::affinity_first::{allocate, AffinityFirstState};
use super::{FirstLevelInput, FirstLevelPolicy};
use crate::sched::settings::SchedulerSettings;

#[derive(Debug)]
struct ProviderAffinityFirst {
    top_k_percent: u32,
}

pub(super) fn build(settings: &SchedulerSettings) -> Box<dyn FirstLevelPolicy> {
    Box::new(ProviderAffinityFirst {
        top_k_percent: settings.top_k_percent,
    })
}

impl FirstLevelPolicy for ProviderAffinityFirst {
    fn allocate(&self, input: &FirstLevelInput, _: &mut dyn RngCore) -> Vec<Vec<u64>> {
        allocate(input, |state: &AffinityFirstState| {
            let n = input.apps.len();
            let mut z = vec![vec![false; input.platforms.len()]; n];
            let needy = state.needy();
            let top = needy.len() * self.top_k_percent as usize / 100;
            for p in state.open_platforms() {
                let mut ranked = needy.clone();
                ranked.sort_by(|&x, &y| {
                    input.affinity[y][p]
                        .total_cmp(&input.affinity[x][p])
                        .then(x.cmp(&y))
                });
                for &a in ranked.iter().take(top) {
                    z[a][p] = true;
                }
                if state.round == 0 {
                    for &a in &needy {
                        if input.previous[a][p] > 0 {
                            z[a][p] = true;
                        }
                    }
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
    fn previous_platforms_are_kept() {
        let mut inp = input(vec![10_000; 4], vec![600, 600]);
        let fresh = build(&SchedulerSettings::default())
            .allocate(&inp, &mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        // Pick an application the platform did not favor and mark it as previously there.
        let (a, p) = (0..4)
            .flat_map(|a| (0..2).map(move |p| (a, p)))
            .find(|&(a, p)| fresh[a][p] == 0)
            .expect("with 4 users and k=50 someone is not favored");
        inp.previous[a][p] = 10;
        let sticky = build(&SchedulerSettings::default())
            .allocate(&inp, &mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        assert!(sticky[a][p] > 0, "{sticky:?}");
    }
}
