//! The TLPA paper's Table II sweep: 2 job orders × the system loadings × 3 speed
//! heterogeneities × {BF, FF, TLPA at d = 2..64}. What runs, what each run measured, and
//! TLPA's improvement over each baseline per (SL, SH) cell. Running the sweep is the
//! caller's job (the CLI runs it in parallel and times each run); its table and plots are
//! `crate::report::tlpa`.

use std::collections::BTreeMap;

use super::alloc::AllocMetrics;
use hetpilot_core::alloc::workload::SystemLoad;

/// TLPA's simulation depths in Table II.
pub(crate) const DEPTHS: [usize; 6] = [2, 4, 8, 16, 32, 64];

/// Table II of the TLPA paper: improvement (%) of TLPA_BJS over BF / FF, averaged over the 9
/// SL x SH combinations, for depths 2..64.
pub(crate) const PAPER_TABLE_II: [(&str, &str, [f64; 6]); 4] = [
    ("fcfs", "bf", [1.84, 3.59, 11.79, 20.41, 25.21, 30.97]),
    ("fcfs", "ff", [10.28, 12.73, 18.20, 24.20, 27.89, 32.75]),
    ("sjf", "bf", [10.32, 10.31, 10.88, 10.77, 10.21, 11.06]),
    ("sjf", "ff", [2.97, 2.98, 3.57, 3.46, 2.96, 3.79]),
];

/// The speed heterogeneities SH of the sweep.
pub(crate) const HETEROGENEITIES: [f64; 3] = [0.0, 0.1, 0.2];

/// The job orders of the sweep.
pub(crate) const ORDERS: [&str; 2] = ["fcfs", "sjf"];

/// One run of the sweep: job order, loading, SH, allocator and (for TLPA) depth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    /// Job order: `fcfs` or `sjf`.
    pub scheduler: &'static str,
    /// System loading SL.
    pub load: SystemLoad,
    /// Speed heterogeneity SH (see `hetpilot_core::alloc::workload`).
    pub sh: f64,
    /// Allocator: `bf`, `ff` or `tlpa`.
    pub allocator: &'static str,
    /// TLPA's depth; 0 for BF and FF.
    pub depth: usize,
}

/// Every run of the sweep over `loads`, the longest (deepest) first so a pool stays busy.
pub fn sweep_plan(loads: &[SystemLoad]) -> Vec<SweepPoint> {
    let mut plan = Vec::new();
    for scheduler in ORDERS {
        for &load in loads {
            for sh in HETEROGENEITIES {
                let point = |allocator, depth| SweepPoint {
                    scheduler,
                    load,
                    sh,
                    allocator,
                    depth,
                };
                plan.push(point("bf", 0));
                plan.push(point("ff", 0));
                for d in DEPTHS {
                    plan.push(point("tlpa", d));
                }
            }
        }
    }
    plan.sort_by_key(|p| std::cmp::Reverse(p.depth));
    plan
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct SweepRun {
    /// Job order: `fcfs` or `sjf`.
    pub scheduler: &'static str,
    /// System loading SL.
    pub load: SystemLoad,
    /// Speed heterogeneity SH.
    pub sh: f64,
    /// Allocator: `bf`, `ff` or `tlpa`.
    pub allocator: &'static str,
    /// TLPA's depth; 0 for BF and FF.
    pub depth: usize,
    /// What the simulation measured.
    pub metrics: AllocMetrics,
    /// Wall time of the whole run, seconds.
    pub seconds: f64,
}

/// The run of `runs` at the given point.
///
/// # Panics
/// When the sweep has no such run (every planned run is expected to be present).
pub(crate) fn find<'a>(
    runs: &'a [SweepRun],
    scheduler: &str,
    load: SystemLoad,
    sh: f64,
    allocator: &str,
    depth: usize,
) -> &'a SweepRun {
    runs.iter()
        .find(|r| {
            r.scheduler == scheduler
                && r.load == load
                && r.sh == sh
                && r.allocator == allocator
                && r.depth == depth
        })
        .expect("every planned run is present")
}

/// Improvement (%) of TLPA over each baseline per (order, baseline, depth), one value per
/// SL x SH cell.
pub(crate) type ImprovementTable = BTreeMap<(&'static str, &'static str, usize), Vec<f64>>;

/// (ATT_base − ATT_TLPA) / ATT_base × 100 for every (order, baseline, depth) and cell.
pub fn improvement_table(runs: &[SweepRun], loads: &[SystemLoad]) -> ImprovementTable {
    let mut table = ImprovementTable::new();
    for scheduler in ORDERS {
        for base in ["bf", "ff"] {
            for d in DEPTHS {
                let mut v = Vec::new();
                for &load in loads {
                    for sh in HETEROGENEITIES {
                        let b = find(runs, scheduler, load, sh, base, 0)
                            .metrics
                            .avg_turnaround;
                        let t = find(runs, scheduler, load, sh, "tlpa", d)
                            .metrics
                            .avg_turnaround;
                        v.push((b - t) / b * 100.0);
                    }
                }
                table.insert((scheduler, base, d), v);
            }
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_covers_every_cell_deepest_first() {
        let plan = sweep_plan(&[SystemLoad::Low, SystemLoad::High]);
        assert_eq!(plan.len(), 2 * 2 * 3 * (2 + DEPTHS.len()));
        assert_eq!(plan[0].depth, 64);
        assert!(plan.windows(2).all(|w| w[0].depth >= w[1].depth));
    }
}
