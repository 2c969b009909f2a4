//! The multiple-PTG experiment of §5.1: PTG populations (random, Strassen, FFT), sets of
//! `N` PTGs drawn from them, each set scheduled on each of Table 1's clusters by every
//! algorithm. The paper's suite: 3 families × N ∈ {2, 4, 6, 8, 10} × 25 sets × 4 clusters
//! = 1,500 scenarios, seeded.
//!
//! A PTG drawn into several sets is prepared once per cluster (its HCPA schedule alone and,
//! for CAFM, its moldable profile), as §5.2.7 allows. The caller runs the scenarios (and
//! times them: the core has no clock) with [`Suite::run`].

use std::sync::{Arc, OnceLock};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::ptg_generator::PtgFamily;
use hetpilot_core::ptg::algorithms::{run, ClusterPtg, Instance, MultiPtgAlgorithm, Outcome};
use hetpilot_core::ptg::hcpa::HcpaSettings;
use hetpilot_core::ptg::{Cluster, Ptg};

/// What the suite covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteSettings {
    /// Seeds the populations, the sets and the algorithms' tie-breaking.
    pub seed: u64,
    /// The PTG families.
    pub families: Vec<PtgFamily>,
    /// The numbers of concurrent PTGs `N`.
    pub ptg_counts: Vec<usize>,
    /// Sets drawn per family and `N` (each scheduled on every cluster).
    pub sets_per_count: usize,
    /// The clusters.
    pub clusters: Vec<Cluster>,
    /// HCPA's options.
    pub hcpa: HcpaSettings,
}

impl Default for SuiteSettings {
    /// The paper's suite (§5.1.2): all three families, N = 2, 4, 6, 8, 10, 25 sets, the
    /// four clusters of Table 1.
    fn default() -> Self {
        SuiteSettings {
            seed: 1,
            families: PtgFamily::ALL.to_vec(),
            ptg_counts: vec![2, 4, 6, 8, 10],
            sets_per_count: 25,
            clusters: Cluster::table1(),
            hcpa: HcpaSettings::default(),
        }
    }
}

/// One scheduling problem of the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// The family the PTGs come from.
    pub family: PtgFamily,
    /// `N`.
    pub ptg_count: usize,
    /// Which set of that family and `N` (the same set on every cluster).
    pub set: usize,
    /// Index into [`SuiteSettings::clusters`].
    pub cluster: usize,
    /// The PTGs, as indices into the family's population (drawn with replacement).
    pub members: Vec<usize>,
}

/// The populations, the scenarios and the per-cluster preparations of the PTGs.
#[derive(Debug)]
pub struct Suite {
    settings: SuiteSettings,
    /// `populations[f]`: the PTGs of `settings.families[f]`, in Gflop.
    populations: Vec<Vec<Ptg>>,
    /// `prepared[c][f][k]`: PTG `k` of family `f` on cluster `c`, prepared on first use.
    prepared: Vec<Vec<Vec<OnceLock<Arc<ClusterPtg>>>>>,
    scenarios: Vec<Scenario>,
}

impl Suite {
    /// Generates the populations and draws the sets.
    pub fn new(settings: SuiteSettings) -> Suite {
        let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
        let populations: Vec<Vec<Ptg>> = settings
            .families
            .iter()
            .map(|f| f.population(&mut rng))
            .collect();
        let mut scenarios = Vec::new();
        for (f, &family) in settings.families.iter().enumerate() {
            for &count in &settings.ptg_counts {
                for set in 0..settings.sets_per_count {
                    let members: Vec<usize> = (0..count)
                        .map(|_| rng.random_range(0..populations[f].len()))
                        .collect();
                    for cluster in 0..settings.clusters.len() {
                        scenarios.push(Scenario {
                            family,
                            ptg_count: count,
                            set,
                            cluster,
                            members: members.clone(),
                        });
                    }
                }
            }
        }
        let prepared = settings
            .clusters
            .iter()
            .map(|_| {
                populations
                    .iter()
                    .map(|p| (0..p.len()).map(|_| OnceLock::new()).collect())
                    .collect()
            })
            .collect();
        Suite {
            settings,
            populations,
            prepared,
            scenarios,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &SuiteSettings {
        &self.settings
    }

    /// Every scenario, family by family, `N` by `N`, set by set, cluster by cluster.
    pub fn scenarios(&self) -> &[Scenario] {
        &self.scenarios
    }

    fn family_index(&self, family: PtgFamily) -> usize {
        self.settings
            .families
            .iter()
            .position(|&f| f == family)
            .expect("a scenario's family is in the suite")
    }

    /// PTG `member` of `family` placed on `cluster` (times in seconds there), unprepared.
    fn on_cluster(&self, family: usize, member: usize, cluster: usize) -> Ptg {
        let c = &self.settings.clusters[cluster];
        self.populations[family][member].scaled(1.0 / c.gflops)
    }

    /// Scenario `index` as an instance, its PTGs prepared once per cluster and kept.
    pub fn instance(&self, index: usize) -> Instance {
        let s = &self.scenarios[index];
        let f = self.family_index(s.family);
        let processors = self.settings.clusters[s.cluster].processors;
        let ptgs = s
            .members
            .iter()
            .map(|&k| {
                self.prepared[s.cluster][f][k]
                    .get_or_init(|| {
                        Arc::new(ClusterPtg::new(
                            self.on_cluster(f, k, s.cluster),
                            processors,
                            self.settings.hcpa,
                        ))
                    })
                    .clone()
            })
            .collect();
        Instance { processors, ptgs }
    }

    /// Scenario `index` as an instance prepared from scratch (nothing reused: to time an
    /// algorithm as §5.2.7 does).
    pub fn fresh_instance(&self, index: usize) -> Instance {
        let s = &self.scenarios[index];
        let f = self.family_index(s.family);
        let processors = self.settings.clusters[s.cluster].processors;
        Instance {
            processors,
            ptgs: s
                .members
                .iter()
                .map(|&k| {
                    Arc::new(ClusterPtg::new(
                        self.on_cluster(f, k, s.cluster),
                        processors,
                        self.settings.hcpa,
                    ))
                })
                .collect(),
        }
    }

    /// Runs `algorithm` on scenario `index`, its ties broken by an RNG seeded from the
    /// suite's seed, the scenario and the algorithm's name.
    pub fn run(&self, index: usize, algorithm: &dyn MultiPtgAlgorithm) -> Outcome {
        let instance = self.instance(index);
        run(
            algorithm,
            &instance,
            &mut self.rng_for(index, algorithm.name()),
        )
    }

    /// The RNG for one run.
    pub fn rng_for(&self, index: usize, algorithm: &str) -> ChaCha8Rng {
        let name = algorithm.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
        ChaCha8Rng::seed_from_u64(
            self.settings.seed ^ name ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        )
    }
}

/// One algorithm's result on one scenario, as the reports read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Index into [`Suite::scenarios`].
    pub scenario: usize,
    /// The scenario's family.
    pub family: PtgFamily,
    /// The scenario's `N`.
    pub ptg_count: usize,
    /// The scenario's cluster name.
    pub cluster: String,
    /// The algorithm's name.
    pub algorithm: String,
    /// Average stretch.
    pub average_stretch: f64,
    /// Overall makespan, seconds.
    pub makespan: f64,
    /// Maximum stretch.
    pub maximum_stretch: f64,
    /// Minimum stretch (below 1: a PTG ended sooner than alone).
    pub minimum_stretch: f64,
    /// Utilization in [0, 1].
    pub utilization: f64,
    /// Seconds the algorithm took (measured by the caller; 0 if not).
    pub seconds: f64,
}

impl RunRecord {
    /// The record of `outcome` for scenario `index` of `suite`.
    pub fn new(
        suite: &Suite,
        index: usize,
        algorithm: &str,
        outcome: &Outcome,
        seconds: f64,
    ) -> RunRecord {
        let s = &suite.scenarios()[index];
        let m = outcome.metrics;
        RunRecord {
            scenario: index,
            family: s.family,
            ptg_count: s.ptg_count,
            cluster: suite.settings().clusters[s.cluster].name.clone(),
            algorithm: algorithm.to_string(),
            average_stretch: m.average_stretch,
            makespan: m.makespan,
            maximum_stretch: m.maximum_stretch,
            minimum_stretch: m.minimum_stretch,
            utilization: m.utilization,
            seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_core::ptg::algorithms::PtgAlgorithm;

    fn small() -> Suite {
        Suite::new(SuiteSettings {
            seed: 3,
            families: vec![PtgFamily::Fft, PtgFamily::Strassen],
            ptg_counts: vec![2, 3],
            sets_per_count: 2,
            clusters: Cluster::table1()[..2].to_vec(),
            hcpa: HcpaSettings::default(),
        })
    }

    #[test]
    fn the_paper_suite_has_1500_scenarios() {
        let settings = SuiteSettings::default();
        let n = settings.families.len()
            * settings.ptg_counts.len()
            * settings.sets_per_count
            * settings.clusters.len();
        assert_eq!(n, 1500);
    }

    #[test]
    fn a_set_is_the_same_on_every_cluster_and_prepared_once() {
        let suite = small();
        assert_eq!(suite.scenarios().len(), 2 * 2 * 2 * 2);
        let (a, b) = (&suite.scenarios()[0], &suite.scenarios()[1]);
        assert_eq!(a.members, b.members);
        assert_ne!(a.cluster, b.cluster);
        let first = suite.instance(0);
        let again = suite.instance(0);
        assert!(Arc::ptr_eq(&first.ptgs[0], &again.ptgs[0]));
        let fresh = suite.fresh_instance(0);
        assert!(!Arc::ptr_eq(&first.ptgs[0], &fresh.ptgs[0]));
        assert_eq!(fresh.ptgs[0].alone, first.ptgs[0].alone);
        // chti's processors are faster: the same PTG is shorter there.
        let on_chti = suite.instance(0);
        let on_grillon = suite.instance(1);
        assert!(on_chti.ptgs[0].ptg.sequential_work() < on_grillon.ptgs[0].ptg.sequential_work());
    }

    #[test]
    fn runs_are_reproducible() {
        let suite = small();
        let alg = PtgAlgorithm::Selfish.build();
        let a = suite.run(5, alg.as_ref());
        let b = small().run(5, alg.as_ref());
        assert_eq!(a.schedule, b.schedule);
        let r = RunRecord::new(&suite, 5, "SELFISH", &a, 0.0);
        assert_eq!(r.ptg_count, suite.scenarios()[5].ptg_count);
        assert!(r.average_stretch >= 0.9);
    }
}
