//! The algorithms of §4, each a [`MultiPtgAlgorithm`]: given an [`Instance`] (several
//! PTGs on one cluster) and a seeded RNG for random tie-breaking, a schedule. [`run`]
//! applies the backfilling post-pass all of them end with (§4.1) and computes the
//! [`Metrics`]; [`PtgAlgorithm`] names the 19 in the paper's order and builds each.
//!
//! - [`selfish`]: SELFISH, SELFISH_ORDER, SELFISH_WEIGHT (§4.1).
//! - [`zhao`]: C1, C4, F1, F2 after Zhao and Sakellariou (§4.2).
//! - [`cra`]: CRA_NDAGS, CRA_WORK, CRA_WIDTH and their _WEIGHT variants (§4.3), and
//!   CAFM_CRA(_WEIGHT), CRA on the dual approximation's allocations (§4.4).
//! - [`cafm`]: CAFM_LPTF, CAFM_SPTF, CAFM_SAF, CAFM_K_SHELVES (§4.4).

pub mod cafm;
pub mod cra;
pub mod selfish;
pub mod zhao;

use std::sync::{Arc, OnceLock};

use rand::RngCore;

use super::graph::Ptg;
use super::hcpa::{self, HcpaSchedule, HcpaSettings, MoldableProfile};
use super::list::Priority;
use super::metrics::Metrics;
use super::schedule::{backfill, Schedule};

/// A PTG placed on a cluster: its tasks' times there, its HCPA schedule alone on the
/// whole cluster (which gives `C*_max_i`, the allocations of SELFISH and F1/F2, and the
/// bottom levels), and its moldable-job profile, computed on first use (CAFM) and kept,
/// as §5.2.7 notes a PTG scheduled again need not recompute it.
#[derive(Debug)]
pub struct ClusterPtg {
    /// The PTG, its times in seconds on this cluster's processors.
    pub ptg: Ptg,
    /// HCPA alone on all `P` processors.
    pub alone: HcpaSchedule,
    profile: OnceLock<MoldableProfile>,
    settings: HcpaSettings,
}

impl ClusterPtg {
    /// Prepares `ptg` (times in seconds on this cluster) for a cluster of `processors`.
    pub fn new(ptg: Ptg, processors: u32, settings: HcpaSettings) -> ClusterPtg {
        let alone = hcpa::schedule(&ptg, processors, settings);
        ClusterPtg {
            ptg,
            alone,
            profile: OnceLock::new(),
            settings,
        }
    }

    /// `C*_max_i`: the PTG's HCPA makespan alone on the cluster (§3.2).
    pub fn dedicated_makespan(&self) -> f64 {
        self.alone.makespan
    }

    /// The HCPA options used.
    pub fn settings(&self) -> HcpaSettings {
        self.settings
    }

    /// The PTG as a moldable job: its HCPA makespan on `1..=P` processors (§4.4).
    pub fn profile(&self) -> &MoldableProfile {
        self.profile.get_or_init(|| {
            MoldableProfile::compute(&self.ptg, self.alone.processors, self.settings)
        })
    }
}

/// One scheduling problem: several PTGs, all submitted at time 0, on one cluster.
#[derive(Debug, Clone)]
pub struct Instance {
    /// The cluster's processors `P`.
    pub processors: u32,
    /// The competing PTGs, prepared for this cluster.
    pub ptgs: Vec<Arc<ClusterPtg>>,
}

impl Instance {
    /// The PTGs' graphs, in order.
    pub fn graphs(&self) -> Vec<&Ptg> {
        self.ptgs.iter().map(|p| &p.ptg).collect()
    }

    /// Each PTG's `C*_max_i`.
    pub fn dedicated_makespans(&self) -> Vec<f64> {
        self.ptgs.iter().map(|p| p.dedicated_makespan()).collect()
    }

    /// The HCPA options of the PTGs (those of the first; all are prepared alike).
    pub fn settings(&self) -> HcpaSettings {
        self.ptgs
            .first()
            .map_or_else(HcpaSettings::default, |p| p.settings())
    }
}

/// An algorithm that schedules several PTGs on one cluster.
pub trait MultiPtgAlgorithm: std::fmt::Debug + Send + Sync {
    /// The paper's name (e.g. `CRA_WORK_WEIGHT`).
    fn name(&self) -> &'static str;
    /// The schedule before the backfilling post-pass ([`run`] applies it).
    fn schedule(&self, instance: &Instance, rng: &mut dyn RngCore) -> Schedule;
}

/// How tasks of several PTGs are ordered in a list (§4.1), shared by the SELFISH and CRA
/// families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskOrder {
    /// Decreasing bottom level `bl_ij` (SELFISH, CRA).
    BottomLevel,
    /// Increasing `C*_max_i`, then decreasing bottom level (the `_ORDER` variants).
    ShortestPtgFirst,
    /// Decreasing `bl_ij / (C*_max_i)²` (the `_WEIGHT` variants).
    WeightedBottomLevel,
}

impl TaskOrder {
    /// The priority of a task with bottom level `bottom_level` in a PTG with
    /// `C*_max_i = dedicated`; `tie` breaks ties ("all ties are broken randomly", §4.1).
    pub fn priority(self, bottom_level: f64, dedicated: f64, tie: u64) -> Priority {
        match self {
            TaskOrder::BottomLevel => Priority::new(bottom_level, tie),
            TaskOrder::ShortestPtgFirst => Priority {
                major: -dedicated,
                minor: bottom_level,
                tie,
            },
            TaskOrder::WeightedBottomLevel => Priority::new(
                bottom_level / (dedicated * dedicated).max(f64::MIN_POSITIVE),
                tie,
            ),
        }
    }

    /// Priorities for every task of every PTG of `instance`, given each PTG's bottom
    /// levels, with random ties.
    pub fn priorities(
        self,
        instance: &Instance,
        bottom_levels: &[Vec<f64>],
        rng: &mut dyn RngCore,
    ) -> Vec<Vec<Priority>> {
        instance
            .ptgs
            .iter()
            .zip(bottom_levels)
            .map(|(p, bl)| {
                let c = p.dedicated_makespan();
                bl.iter()
                    .map(|&b| self.priority(b, c, rng.next_u64()))
                    .collect()
            })
            .collect()
    }
}

hetpilot_protocol::named_enum! {
    /// The 19 algorithms of the paper's figures, in their order (Table 2).
    pub enum PtgAlgorithm("multiple-PTG algorithm") {
        /// SELFISH.
        Selfish = "SELFISH",
        /// SELFISH_ORDER.
        SelfishOrder = "SELFISH_ORDER",
        /// SELFISH_WEIGHT.
        SelfishWeight = "SELFISH_WEIGHT",
        /// C1.
        C1 = "C1",
        /// C4.
        C4 = "C4",
        /// F1.
        F1 = "F1",
        /// F2.
        F2 = "F2",
        /// CRA_NDAGS.
        CraNdags = "CRA_NDAGS",
        /// CRA_NDAGS_WEIGHT.
        CraNdagsWeight = "CRA_NDAGS_WEIGHT",
        /// CRA_WORK.
        CraWork = "CRA_WORK",
        /// CRA_WORK_WEIGHT.
        CraWorkWeight = "CRA_WORK_WEIGHT",
        /// CRA_WIDTH.
        CraWidth = "CRA_WIDTH",
        /// CRA_WIDTH_WEIGHT.
        CraWidthWeight = "CRA_WIDTH_WEIGHT",
        /// CAFM_CRA.
        CafmCra = "CAFM_CRA",
        /// CAFM_CRA_WEIGHT.
        CafmCraWeight = "CAFM_CRA_WEIGHT",
        /// CAFM_SAF.
        CafmSaf = "CAFM_SAF",
        /// CAFM_SPTF.
        CafmSptf = "CAFM_SPTF",
        /// CAFM_LPTF.
        CafmLptf = "CAFM_LPTF",
        /// CAFM_K_SHELVES.
        CafmKShelves = "CAFM_K_SHELVES",
    }
}

impl PtgAlgorithm {
    /// The algorithm.
    pub fn build(self) -> Box<dyn MultiPtgAlgorithm> {
        use cafm::{BoxOrder, CafmKShelves, CafmList};
        use cra::{Cra, CraShare};
        use selfish::Selfish;
        use zhao::{Composite, CompositeKind, FairnessDriven, StretchEstimate};
        let cra =
            |share, weighted| -> Box<dyn MultiPtgAlgorithm> { Box::new(Cra { share, weighted }) };
        match self {
            PtgAlgorithm::Selfish => Box::new(Selfish {
                order: TaskOrder::BottomLevel,
            }),
            PtgAlgorithm::SelfishOrder => Box::new(Selfish {
                order: TaskOrder::ShortestPtgFirst,
            }),
            PtgAlgorithm::SelfishWeight => Box::new(Selfish {
                order: TaskOrder::WeightedBottomLevel,
            }),
            PtgAlgorithm::C1 => Box::new(Composite {
                kind: CompositeKind::ForkJoin,
            }),
            PtgAlgorithm::C4 => Box::new(Composite {
                kind: CompositeKind::Grafted,
            }),
            PtgAlgorithm::F1 => Box::new(FairnessDriven {
                estimate: StretchEstimate::LastTask,
            }),
            PtgAlgorithm::F2 => Box::new(FairnessDriven {
                estimate: StretchEstimate::AllGraphs,
            }),
            PtgAlgorithm::CraNdags => cra(CraShare::Equal, false),
            PtgAlgorithm::CraNdagsWeight => cra(CraShare::Equal, true),
            PtgAlgorithm::CraWork => cra(CraShare::Work, false),
            PtgAlgorithm::CraWorkWeight => cra(CraShare::Work, true),
            PtgAlgorithm::CraWidth => cra(CraShare::Width, false),
            PtgAlgorithm::CraWidthWeight => cra(CraShare::Width, true),
            PtgAlgorithm::CafmCra => cra(CraShare::DualApproximation, false),
            PtgAlgorithm::CafmCraWeight => cra(CraShare::DualApproximation, true),
            PtgAlgorithm::CafmSaf => Box::new(CafmList {
                order: BoxOrder::SmallestAreaFirst,
            }),
            PtgAlgorithm::CafmSptf => Box::new(CafmList {
                order: BoxOrder::ShortestFirst,
            }),
            PtgAlgorithm::CafmLptf => Box::new(CafmList {
                order: BoxOrder::LongestFirst,
            }),
            PtgAlgorithm::CafmKShelves => Box::new(CafmKShelves),
        }
    }
}

/// Every algorithm, in [`PtgAlgorithm`] order.
pub fn all() -> Vec<Box<dyn MultiPtgAlgorithm>> {
    PtgAlgorithm::ALL.iter().map(|a| a.build()).collect()
}

/// An algorithm's result on one instance.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The schedule after backfilling.
    pub schedule: Schedule,
    /// Its metrics.
    pub metrics: Metrics,
    /// The metrics of the schedule before backfilling.
    pub metrics_before_backfilling: Metrics,
}

/// Runs `algorithm` on `instance`: its schedule, then backfilling (§4.1), then metrics.
pub fn run(
    algorithm: &dyn MultiPtgAlgorithm,
    instance: &Instance,
    rng: &mut dyn RngCore,
) -> Outcome {
    let graphs = instance.graphs();
    let before = algorithm.schedule(instance, rng);
    let schedule = backfill(&before, &graphs, instance.processors);
    let dedicated = instance.dedicated_makespans();
    Outcome {
        metrics: Metrics::of(&schedule, &dedicated, instance.processors),
        metrics_before_backfilling: Metrics::of(&before, &dedicated, instance.processors),
        schedule,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ptg::graph::tests::task;
    use crate::ptg::model::MoldableTask;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// A fork-join PTG: an empty entry, `branches` tasks of `seconds` (α = 0.1), an empty
    /// exit.
    pub(crate) fn fork_join(name: &str, branches: usize, seconds: f64) -> Ptg {
        let mut tasks = vec![MoldableTask::EMPTY];
        tasks.extend(std::iter::repeat_n(task(seconds, 0.1), branches));
        tasks.push(MoldableTask::EMPTY);
        let exit = branches + 1;
        let edges: Vec<(usize, usize)> = (1..=branches).flat_map(|b| [(0, b), (b, exit)]).collect();
        Ptg::new(name, tasks, &edges).unwrap()
    }

    /// A chain of `length` tasks of `seconds` (α = 0.2).
    pub(crate) fn chain(name: &str, length: usize, seconds: f64) -> Ptg {
        let edges: Vec<(usize, usize)> = (1..length).map(|v| (v - 1, v)).collect();
        Ptg::new(name, vec![task(seconds, 0.2); length], &edges).unwrap()
    }

    /// An instance of the given PTGs on `processors` processors.
    pub(crate) fn instance(ptgs: Vec<Ptg>, processors: u32) -> Instance {
        Instance {
            processors,
            ptgs: ptgs
                .into_iter()
                .map(|g| Arc::new(ClusterPtg::new(g, processors, HcpaSettings::default())))
                .collect(),
        }
    }

    /// A mixed instance: a long chain, a wide fork-join and a short one.
    pub(crate) fn mixed(processors: u32) -> Instance {
        instance(
            vec![
                chain("chain", 6, 40.0),
                fork_join("wide", 12, 30.0),
                fork_join("short", 3, 5.0),
            ],
            processors,
        )
    }

    #[test]
    fn every_name_builds_and_reports_its_name() {
        for &algorithm in PtgAlgorithm::ALL {
            assert_eq!(algorithm.build().name(), algorithm.as_str());
        }
        assert!("HEFT".parse::<PtgAlgorithm>().is_err());
    }

    #[test]
    fn every_algorithm_yields_a_valid_schedule_that_backfilling_does_not_worsen() {
        for processors in [1, 5, 16] {
            let inst = mixed(processors);
            let graphs = inst.graphs();
            for alg in all() {
                let mut rng = ChaCha8Rng::seed_from_u64(7);
                let before = alg.schedule(&inst, &mut rng);
                before
                    .verify(&graphs, processors)
                    .unwrap_or_else(|e| panic!("{} on {processors}: {e}", alg.name()));
                assert_eq!(
                    before.order.len(),
                    graphs.iter().map(|g| g.len()).sum::<usize>()
                );
                let mut rng = ChaCha8Rng::seed_from_u64(7);
                let out = run(alg.as_ref(), &inst, &mut rng);
                out.schedule.verify(&graphs, processors).unwrap();
                for (i, g) in graphs.iter().enumerate() {
                    for v in 0..g.len() {
                        assert!(
                            out.schedule.placements[i][v].start
                                <= before.placements[i][v].start + 1e-9,
                            "{}: backfilling delayed a task",
                            alg.name()
                        );
                    }
                }
                let m = out.metrics;
                assert!(m.makespan <= out.metrics_before_backfilling.makespan + 1e-9);
                assert!(m.utilization > 0.0 && m.utilization <= 1.0 + 1e-9, "{m:?}");
                assert!(m.maximum_stretch >= m.average_stretch - 1e-12);
            }
        }
    }

    #[test]
    fn an_empty_instance_gets_an_empty_schedule() {
        let inst = instance(vec![], 4);
        for alg in all() {
            let out = run(alg.as_ref(), &inst, &mut ChaCha8Rng::seed_from_u64(1));
            assert!(out.schedule.placements.is_empty(), "{}", alg.name());
            assert_eq!(out.metrics.makespan, 0.0);
        }
    }

    #[test]
    fn runs_are_reproducible_with_the_same_seed() {
        let inst = mixed(8);
        for alg in all() {
            let a = run(alg.as_ref(), &inst, &mut ChaCha8Rng::seed_from_u64(3));
            let b = run(alg.as_ref(), &inst, &mut ChaCha8Rng::seed_from_u64(3));
            assert_eq!(a.schedule, b.schedule, "{}", alg.name());
        }
    }

    #[test]
    fn a_single_ptg_alone_has_stretch_one_under_selfish() {
        let inst = instance(vec![fork_join("alone", 5, 10.0)], 8);
        let out = run(
            PtgAlgorithm::Selfish.build().as_ref(),
            &inst,
            &mut ChaCha8Rng::seed_from_u64(1),
        );
        assert!(out.metrics.maximum_stretch <= 1.0 + 1e-12);
        assert!((out.metrics_before_backfilling.maximum_stretch - 1.0).abs() < 1e-12);
    }
}
