//! Constrained Resource Allocation (CRA, N'takpé and Suter [22], §4.3) and CAFM_CRA
//! (§4.4). Each PTG `i` may use a fraction `P_i` of the cluster: its allocation is HCPA's
//! with `⌊P_i · P⌋` (at least 1) processors in place of `P`, so the tasks of one of its
//! precedence levels hold at most that many processors together (the level bound of
//! [`crate::ptg::hcpa`]). Then all tasks of all PTGs are list-scheduled *on ready tasks*
//! only, by decreasing bottom level (or, in the `_WEIGHT` variants, by decreasing
//! `bl / (C*_max_i)²` as SELFISH_WEIGHT), so a short PTG can start at time 0.
//!
//! Shares:
//! - CRA_NDAGS: `P_i = 1/N`;
//! - CRA_WORK, eq. (1): `P_i = 1/(2N) + ω_i / (2 Σ_j ω_j)`, `ω_i` the sequential work;
//! - CRA_WIDTH, eq. (2): `P_i = 1/(2N) + width(i) / (2 Σ_j width(j))`;
//! - CAFM_CRA: the allocation the dual approximation gives PTG `i` as a moldable job
//!   (§4.4, "we execute the approximation algorithm and obtain a resource constraint for
//!   each PTG").

use rand::RngCore;

use super::{Instance, MultiPtgAlgorithm, TaskOrder};
use crate::ptg::hcpa;
use crate::ptg::list::schedule_ready_tasks;
use crate::ptg::mrt::dual_approximation;
use crate::ptg::schedule::Schedule;

/// The relative precision of the dual approximation's binary search.
pub const DUAL_APPROXIMATION_PRECISION: f64 = 1e-3;

/// How CRA sizes each PTG's share of the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CraShare {
    /// CRA_NDAGS: `1/N` each.
    Equal,
    /// CRA_WORK: eq. (1), by sequential work.
    Work,
    /// CRA_WIDTH: eq. (2), by the largest precedence level.
    Width,
    /// CAFM_CRA: the dual approximation's allocation of the PTG as a moldable job.
    DualApproximation,
}

/// A CRA algorithm: a share rule and a list order.
#[derive(Debug, Clone, Copy)]
pub struct Cra {
    /// How shares are computed.
    pub share: CraShare,
    /// Whether tasks are ordered by `bl / (C*)²` (the `_WEIGHT` variants).
    pub weighted: bool,
}

/// `⌊share · P⌋`, at least one processor.
fn processors_of(share: f64, processors: u32) -> u32 {
    ((share * processors as f64 + 1e-9).floor() as u32).clamp(1, processors)
}

impl Cra {
    /// Each PTG's processor bound.
    pub fn bounds(&self, instance: &Instance) -> Vec<u32> {
        let n = instance.ptgs.len() as f64;
        let p = instance.processors;
        let by_weight = |weights: Vec<f64>| -> Vec<u32> {
            let total: f64 = weights.iter().sum();
            weights
                .iter()
                .map(|w| {
                    let share = 1.0 / (2.0 * n)
                        + if total > 0.0 {
                            w / (2.0 * total)
                        } else {
                            0.5 / n
                        };
                    processors_of(share, p)
                })
                .collect()
        };
        match self.share {
            CraShare::Equal => vec![processors_of(1.0 / n, p); instance.ptgs.len()],
            CraShare::Work => by_weight(
                instance
                    .ptgs
                    .iter()
                    .map(|g| g.ptg.sequential_work())
                    .collect(),
            ),
            CraShare::Width => {
                by_weight(instance.ptgs.iter().map(|g| g.ptg.width() as f64).collect())
            }
            CraShare::DualApproximation if instance.ptgs.is_empty() => Vec::new(),
            CraShare::DualApproximation => {
                let profiles: Vec<&[f64]> =
                    instance.ptgs.iter().map(|g| g.profile().times()).collect();
                dual_approximation(&profiles, p, DUAL_APPROXIMATION_PRECISION).allocation
            }
        }
    }
}

impl MultiPtgAlgorithm for Cra {
    fn name(&self) -> &'static str {
        match (self.share, self.weighted) {
            (CraShare::Equal, false) => "CRA_NDAGS",
            (CraShare::Equal, true) => "CRA_NDAGS_WEIGHT",
            (CraShare::Work, false) => "CRA_WORK",
            (CraShare::Work, true) => "CRA_WORK_WEIGHT",
            (CraShare::Width, false) => "CRA_WIDTH",
            (CraShare::Width, true) => "CRA_WIDTH_WEIGHT",
            (CraShare::DualApproximation, false) => "CAFM_CRA",
            (CraShare::DualApproximation, true) => "CAFM_CRA_WEIGHT",
        }
    }

    fn schedule(&self, instance: &Instance, rng: &mut dyn RngCore) -> Schedule {
        let bounds = self.bounds(instance);
        let settings = instance.settings();
        let allocations: Vec<Vec<u32>> = instance
            .ptgs
            .iter()
            .zip(&bounds)
            .map(|(g, &b)| hcpa::allocate(&g.ptg, b, settings))
            .collect();
        let bottom_levels: Vec<Vec<f64>> = instance
            .ptgs
            .iter()
            .zip(&allocations)
            .map(|(g, a)| g.ptg.bottom_levels(a))
            .collect();
        let order = if self.weighted {
            TaskOrder::WeightedBottomLevel
        } else {
            TaskOrder::BottomLevel
        };
        let priorities = order.priorities(instance, &bottom_levels, rng);
        let graphs = instance.graphs();
        let refs: Vec<&[u32]> = allocations.iter().map(Vec::as_slice).collect();
        schedule_ready_tasks(&graphs, &refs, &priorities, instance.processors, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptg::algorithms::tests::{chain, fork_join, instance};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn shares_follow_equations_1_and_2() {
        // Works: chain 4 × 10 = 40, fork-join 6 × 10 = 60 (+ empty tasks). Widths: 1 and 6.
        let inst = instance(vec![chain("c", 4, 10.0), fork_join("f", 6, 10.0)], 20);
        let eq = Cra {
            share: CraShare::Equal,
            weighted: false,
        };
        assert_eq!(eq.bounds(&inst), vec![10, 10]);
        // Work: 1/4 + 40/200 = 0.45 → 9; 1/4 + 60/200 = 0.55 → 11.
        let work = Cra {
            share: CraShare::Work,
            weighted: false,
        };
        assert_eq!(work.bounds(&inst), vec![9, 11]);
        // Width: 1/4 + 1/14 = 0.3214 → 6; 1/4 + 6/14 = 0.6786 → 13.
        let width = Cra {
            share: CraShare::Width,
            weighted: false,
        };
        assert_eq!(width.bounds(&inst), vec![6, 13]);
    }

    #[test]
    fn a_ptgs_levels_stay_within_its_share() {
        let inst = instance(vec![fork_join("a", 8, 20.0), fork_join("b", 8, 20.0)], 16);
        let cra = Cra {
            share: CraShare::Equal,
            weighted: false,
        };
        let s = cra.schedule(&inst, &mut ChaCha8Rng::seed_from_u64(2));
        s.verify(&inst.graphs(), 16).unwrap();
        for i in 0..2 {
            let level_total: u32 = (1..=8).map(|v| s.placements[i][v].processors).sum();
            assert!(
                level_total <= 8,
                "PTG {i} holds {level_total} processors in one level"
            );
        }
    }

    #[test]
    fn cafm_cra_bounds_come_from_the_dual_approximation() {
        let inst = instance(vec![chain("c", 3, 30.0), fork_join("f", 6, 10.0)], 12);
        let bounds = Cra {
            share: CraShare::DualApproximation,
            weighted: true,
        }
        .bounds(&inst);
        assert_eq!(bounds.len(), 2);
        assert!(bounds.iter().all(|&b| (1..=12).contains(&b)), "{bounds:?}");
    }
}
