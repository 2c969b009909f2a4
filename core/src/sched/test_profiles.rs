//! Small synthetic profiles for tests and benchmarks: `n` applications on `m` platforms
//! with AllCore and pairwise combinations (each application profiled next to
//! `partners` others), runtimes drawn from a seeded RNG.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::profile::{
    ApplicationProfile, CombinationSpec, ProfiledPlatform, RuntimeDistribution, RuntimeProfile,
};

/// A random but valid profile (deterministic for a given `seed`).
pub fn synthetic_profile(
    n: usize,
    m: usize,
    cores_per_node: u32,
    partners: usize,
    seed: u64,
) -> RuntimeProfile {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let applications = (0..n)
        .map(|i| ApplicationProfile {
            name: format!("app{i}"),
            distribution: RuntimeDistribution::LogNormal { cv: 0.2 },
        })
        .collect();
    let platforms = (0..m)
        .map(|j| ProfiledPlatform {
            name: format!("platform{j}"),
            cores_per_node,
            max_nodes: None,
        })
        .collect();
    let one_core: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..m).map(|_| rng.random_range(50.0..500.0)).collect())
        .collect();
    let solo = |a: usize, p: usize| one_core[a][p];
    let mut combinations = Vec::new();
    for p in 0..m {
        for a in 0..n {
            combinations.push(CombinationSpec {
                platform: p,
                runtimes: vec![(a, solo(a, p) * rng.random_range(1.0..1.5))],
            });
        }
        if cores_per_node.is_multiple_of(2) && n > 1 {
            let mut seen = std::collections::HashSet::new();
            for a in 0..n {
                for k in 1..=partners.min(n - 1) {
                    let b = (a + k * 7919) % n;
                    let pair = (a.min(b), a.max(b));
                    if a == b || !seen.insert(pair) {
                        continue;
                    }
                    combinations.push(CombinationSpec {
                        platform: p,
                        runtimes: vec![
                            (pair.0, solo(pair.0, p) * rng.random_range(1.0..2.0)),
                            (pair.1, solo(pair.1, p) * rng.random_range(1.0..2.0)),
                        ],
                    });
                }
            }
        }
    }
    RuntimeProfile::new(
        "<synthetic>",
        applications,
        platforms,
        one_core,
        combinations,
    )
    .expect("synthetic profiles are valid by construction")
}
