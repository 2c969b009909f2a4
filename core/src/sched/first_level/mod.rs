//! First level (Section 5.1): how many cores of each platform each application gets.
//!
//! Every policy implements [`FirstLevelPolicy`] and is named by a [`FirstLevel`], which
//! builds it; the scheduler hands it a [`FirstLevelInput`] restricted to applications
//! with remaining tasks and platforms with cores, with the platform affinities of
//! Algorithm 1/2 line 6 already computed.

mod aaf;
mod affinity_first;
mod fairness;
mod pa_round_robin;
mod paf;
mod water_fill;

use rand::RngCore;

use super::settings::SchedulerSettings;

/// The first level's view of a snapshot, in compact indices: `a` ranges over the active
/// applications, `p` over the platforms with cores.
#[derive(Debug, Clone)]
pub(crate) struct FirstLevelInput {
    /// Snapshot index of each active application.
    pub(crate) apps: Vec<usize>,
    /// Snapshot index of each platform with cores.
    pub(crate) platforms: Vec<usize>,
    /// Remaining tasks per application: no application needs more cores than that.
    pub(crate) demand: Vec<u64>,
    /// Cores per platform.
    pub(crate) capacity: Vec<u64>,
    /// Platform affinity `affinity[a][p]` (higher = more beneficial), per the settings' metric.
    pub(crate) affinity: Vec<Vec<f64>>,
    /// Expected speed relative to Fastest-OneCore, `speed[a][p]` ∈ (0, 1]: fastest OneCore
    /// runtime over the OneCore runtime on `p` inflated by the mean co-runner slowdown there.
    /// Computed only for policies whose [`FirstLevelPolicy::uses_speed`] is true (else empty).
    pub(crate) speed: Vec<Vec<f64>>,
    /// Relative entitlement of each application (user weight / the user's active applications).
    pub(crate) entitlement: Vec<f64>,
    /// Tasks each application has finished so far.
    pub(crate) completed_tasks: Vec<u64>,
    /// Seconds since each application was submitted.
    pub(crate) age_s: Vec<f64>,
    /// Each application's fastest OneCore runtime over the platforms with cores, seconds.
    pub(crate) fastest_runtime: Vec<f64>,
    /// Cores each application held on each platform in the previous round.
    pub(crate) previous: Vec<Vec<u32>>,
    /// Whether application `a` can run on column `p` at all, `feasible[a][p]`: false where
    /// none of its variants fits the platform (a GPU variant on a node without GPUs). Every
    /// pair is feasible when each column is a plain platform.
    pub(crate) feasible: Vec<Vec<bool>>,
}

impl FirstLevelInput {
    /// The platforms application `a` can run on, in decreasing affinity (ties to the
    /// lower index).
    pub(crate) fn platforms_by_affinity(&self, a: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.platforms.len())
            .filter(|&p| self.feasible[a][p])
            .collect();
        order.sort_by(|&x, &y| {
            self.affinity[a][y]
                .total_cmp(&self.affinity[a][x])
                .then(x.cmp(&y))
        });
        order
    }

    /// Each application's demand, capped by the capacity of the columns it can run on.
    pub(crate) fn feasible_demand(&self) -> Vec<u64> {
        (0..self.apps.len())
            .map(|a| {
                let reach: u64 = self
                    .platforms_by_affinity(a)
                    .iter()
                    .map(|&p| self.capacity[p])
                    .fold(0, u64::saturating_add);
                self.demand[a].min(reach)
            })
            .collect()
    }
}

/// Hands out what a policy left free: in turn, each application with unmet demand takes
/// one slot of its highest-affinity feasible column that still has free slots, until no
/// application can take any. Makes an allocation maximal when feasibility splits the
/// columns (a fair share an application cannot use goes to those that can).
pub(crate) fn fill_leftovers(input: &FirstLevelInput, alloc: &mut [Vec<u64>]) {
    let m = input.platforms.len();
    let mut free: Vec<u64> = (0..m)
        .map(|p| {
            let used: u64 = alloc.iter().map(|row| row[p]).sum();
            input.capacity[p].saturating_sub(used)
        })
        .collect();
    let mut unmet: Vec<u64> = alloc
        .iter()
        .zip(&input.demand)
        .map(|(row, &d)| d.saturating_sub(row.iter().sum()))
        .collect();
    let orders: Vec<Vec<usize>> = (0..alloc.len())
        .map(|a| input.platforms_by_affinity(a))
        .collect();
    let mut turn: Vec<usize> = (0..alloc.len()).filter(|&a| unmet[a] > 0).collect();
    while !turn.is_empty() {
        turn.retain(|&a| {
            let Some(&p) = orders[a].iter().find(|&&p| free[p] > 0) else {
                return false;
            };
            alloc[a][p] += 1;
            free[p] -= 1;
            unmet[a] -= 1;
            unmet[a] > 0
        });
    }
}

/// A first-level resource allocation policy.
pub(crate) trait FirstLevelPolicy: std::fmt::Debug + Send + Sync {
    /// Cores per (active application, platform) as `result[a][p]`; never more than the
    /// platform's capacity in total nor more than an application's demand.
    fn allocate(&self, input: &FirstLevelInput, rng: &mut dyn RngCore) -> Vec<Vec<u64>>;
    /// Whether the policy reads [`FirstLevelInput::speed`] (costly to compute at scale).
    fn uses_speed(&self) -> bool {
        false
    }
}

hetpilot_protocol::named_enum! {
    /// A first-level policy, by the name settings and scenarios give it.
    pub enum FirstLevel("first-level policy") {
        /// Equal (entitlement-weighted) cores, each platform shared equally (baseline).
        Fairness = "fairness",
        /// Provider Affinity First: each platform favours its top k% applications.
        Paf = "paf",
        /// Application Affinity First: each application favours its top k% platforms.
        Aaf = "aaf",
        /// Platform Affinity based Round-Robin in turns of D_unit cores (Algorithm 2).
        PaRoundRobin = "pa-rr",
        /// Max-min water-filling on normalized throughput, D_unit cores at a time.
        WaterFill = "water-fill",
    }
}

impl FirstLevel {
    /// The policy, tuned by `settings`.
    pub(crate) fn build(self, settings: &SchedulerSettings) -> Box<dyn FirstLevelPolicy> {
        match self {
            FirstLevel::Fairness => fairness::build(settings),
            FirstLevel::Paf => paf::build(settings),
            FirstLevel::Aaf => aaf::build(settings),
            FirstLevel::PaRoundRobin => pa_round_robin::build(settings),
            FirstLevel::WaterFill => water_fill::build(settings),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// A small input: 3 applications × 2 platforms.
    pub(crate) fn input(demand: Vec<u64>, capacity: Vec<u64>) -> FirstLevelInput {
        let n = demand.len();
        let m = capacity.len();
        let affinity: Vec<Vec<f64>> = (0..n)
            .map(|a| {
                (0..m)
                    .map(|p| 1.0 + ((a * 7 + p * 3) % 5) as f64 / 4.0)
                    .collect()
            })
            .collect();
        let speed = affinity
            .iter()
            .map(|row| {
                let max = row.iter().cloned().fold(f64::MIN, f64::max);
                row.iter().map(|v| v / max).collect()
            })
            .collect();
        FirstLevelInput {
            apps: (0..n).collect(),
            platforms: (0..m).collect(),
            demand,
            capacity,
            affinity,
            speed,
            entitlement: vec![1.0; n],
            completed_tasks: vec![0; n],
            age_s: vec![0.0; n],
            fastest_runtime: vec![100.0; n],
            previous: vec![vec![0; m]; n],
            feasible: vec![vec![true; m]; n],
        }
    }

    proptest! {
        #[test]
        fn every_policy_respects_capacity_and_demand(
            demand in proptest::collection::vec(0u64..400, 0..7),
            capacity in proptest::collection::vec(0u64..300, 1..5),
            seed in any::<u64>(),
            infeasible in proptest::collection::vec(any::<bool>(), 0..35),
        ) {
            let mut inp = input(demand.clone(), capacity.clone());
            // Some (application, column) pairs cannot run at all (a GPU variant on a CPU
            // platform); without any, the allocation must also be work-conserving.
            for (k, &off) in infeasible.iter().enumerate() {
                let (a, p) = (k / capacity.len(), k % capacity.len());
                if a < demand.len() && off {
                    inp.feasible[a][p] = false;
                }
            }
            for &name in FirstLevel::ALL {
                let settings = SchedulerSettings { d_unit: 3, ..Default::default() };
                let policy = name.build(&settings);
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let alloc = policy.allocate(&inp, &mut rng);
                prop_assert_eq!(alloc.len(), demand.len());
                for (p, &cap) in capacity.iter().enumerate() {
                    let used: u64 = alloc.iter().map(|r| r[p]).sum();
                    prop_assert!(used <= cap, "{} over capacity on {}", name, p);
                }
                for (a, &d) in demand.iter().enumerate() {
                    let got: u64 = alloc[a].iter().sum();
                    prop_assert!(got <= d, "{} over demand for {}", name, a);
                }
                // Never an infeasible pair; and maximal: no application with unmet demand
                // could still take a free slot of a column it can run on.
                for (a, row) in alloc.iter().enumerate() {
                    let unmet = demand[a] - row.iter().sum::<u64>();
                    for (p, &cap) in capacity.iter().enumerate() {
                        let free = cap - alloc.iter().map(|r| r[p]).sum::<u64>();
                        if !inp.feasible[a][p] {
                            prop_assert_eq!(row[p], 0, "{} used infeasible ({}, {})", name, a, p);
                        } else {
                            prop_assert!(unmet == 0 || free == 0, "{} left ({}, {}) idle: {:?}", name, a, p, alloc);
                        }
                    }
                }
            }
        }
    }
}
