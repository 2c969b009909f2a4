//! The multiple-PTG algorithms in the live manager: several workflow applications
//! competing for the cores that the two-level first level gives them are scheduled by one
//! of the paper's two practical fair algorithms, CAFM_K_SHELVES or CRA_WORK_WEIGHT
//! (`multiple-ptg-cluster-allocation.md`, §5.3 and the conclusion), chosen by name in the
//! configuration. A scheduling round hands [`plan`] what remains of each workflow (done
//! tasks cost nothing) and the cores; the very algorithm the simulator runs
//! ([`super::algorithms::run`], backfilling included) schedules them, and the queues lease
//! ready tasks in the order of their planned starts, a moldable task with its planned
//! processors. [`RuntimeRefinement`] learns how a workflow's measured runtimes compare with
//! its model `T(v, p)` and scales what remains, as the runtime profile does for bags of
//! tasks.
//!
//! Where we differ from the paper: the platform's cores are treated as one homogeneous
//! cluster of `P` processors (the first level already weighed platform speeds); a rigid
//! task (one with a fixed core count) is planned as a non-parallelizable task (α = 1) of
//! its recorded runtime, so the plan counts one processor for it whatever cores it
//! reserves; and the plan is remade every round from the workflows' state, not once.

use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::algorithms::{self, ClusterPtg, Instance, MultiPtgAlgorithm, PtgAlgorithm};
use super::graph::Ptg;
use super::hcpa::HcpaSettings;
use super::model::MoldableTask;

/// The largest total number of tasks (of all competing workflows) a round plans; past it
/// the workflows' ready tasks leave by bottom level alone (HCPA on every processor count
/// costs too much for a round).
pub const MAX_PLANNED_TASKS: usize = 20_000;
/// The most processors a round plans for (CAFM's moldable profiles run HCPA once per
/// processor count).
pub const MAX_PLANNED_PROCESSORS: u32 = 1024;

hetpilot_protocol::named_enum! {
    /// How competing workflows share their cores.
    #[derive(Default)]
    pub enum WorkflowPolicy("workflow policy") {
        /// CAFM_K_SHELVES (§4.4): each workflow a moldable job, boxes packed in K shelves,
        /// HCPA inside each box.
        #[default]
        CafmKShelves = "cafm-k-shelves",
        /// CRA_WORK_WEIGHT (§4.3): each workflow bounded by its share of the sequential
        /// work (eq. 1), tasks by decreasing `bl / (C*_max)²`.
        CraWorkWeight = "cra-work-weight",
        /// No multiple-PTG policy: the two-level scheduler and the round-robin between
        /// applications decide, each workflow's ready tasks by bottom level.
        RoundRobin = "round-robin",
    }
}

impl WorkflowPolicy {
    /// The paper's algorithm it runs (`None`: round-robin).
    pub fn algorithm(self) -> Option<Box<dyn MultiPtgAlgorithm>> {
        match self {
            WorkflowPolicy::CafmKShelves => Some(PtgAlgorithm::CafmKShelves.build()),
            WorkflowPolicy::CraWorkWeight => Some(PtgAlgorithm::CraWorkWeight.build()),
            WorkflowPolicy::RoundRobin => None,
        }
    }
}

/// What a round decided for one workflow: per task (by index), its planned start
/// (seconds from the round) and processors.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowPlan {
    /// Planned start of each task, seconds after the round.
    pub start: Vec<f64>,
    /// Planned processors of each task (its HCPA allocation for a moldable task).
    pub processors: Vec<u32>,
}

/// The plan of `policy` for the competing workflows `remaining` (their graphs with done
/// tasks at zero cost) on `processors` cores, seeded; `None` when the policy plans
/// nothing (round-robin, no workflow or no core) or the instance is past the bounds above.
pub fn plan(
    policy: WorkflowPolicy,
    remaining: Vec<Ptg>,
    processors: u32,
    seed: u64,
) -> Option<Vec<WorkflowPlan>> {
    let algorithm = policy.algorithm()?;
    let tasks: usize = remaining.iter().map(Ptg::len).sum();
    if remaining.is_empty()
        || processors == 0
        || processors > MAX_PLANNED_PROCESSORS
        || tasks > MAX_PLANNED_TASKS
    {
        return None;
    }
    let instance = Instance {
        processors,
        ptgs: remaining
            .into_iter()
            .map(|g| Arc::new(ClusterPtg::new(g, processors, HcpaSettings::default())))
            .collect(),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let outcome = algorithms::run(algorithm.as_ref(), &instance, &mut rng);
    Some(
        outcome
            .schedule
            .placements
            .iter()
            .map(|p| WorkflowPlan {
                start: p.iter().map(|q| q.start).collect(),
                processors: p.iter().map(|q| q.processors.max(1)).collect(),
            })
            .collect(),
    )
}

/// A workflow task's model `T(v, p)` from what it declares: its recorded runtime on
/// `recorded_cores` cores (`None`: `unrecorded_secs`), Amdahl's `serial_fraction` when
/// moldable, else rigid (α = 1, see the module documentation).
pub fn task_model(
    recorded_secs: Option<f64>,
    unrecorded_secs: f64,
    recorded_cores: u32,
    moldable: Option<f64>,
) -> MoldableTask {
    let secs = recorded_secs
        .filter(|r| r.is_finite() && *r >= 0.0)
        .unwrap_or(unrecorded_secs);
    match moldable {
        Some(alpha) => {
            let alpha = alpha.clamp(0.0, 1.0);
            let p = f64::from(recorded_cores.max(1));
            MoldableTask {
                // T(v, 1) such that T(v, recorded_cores) is the recorded runtime.
                sequential_seconds: secs / (alpha + (1.0 - alpha) / p),
                serial_fraction: alpha,
            }
        }
        None => MoldableTask {
            sequential_seconds: secs,
            serial_fraction: 1.0,
        },
    }
}

/// How one workflow's measured runtimes compare with its model, learned online: the
/// ratio of measured to modelled time over its finished runs, and the mean one-processor
/// time of its tasks that had no recorded runtime.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RuntimeRefinement {
    measured_secs: f64,
    modelled_secs: f64,
    unrecorded_secs: f64,
    unrecorded_runs: u32,
}

/// The bounds of the learned ratio (one odd run must not zero or explode the model).
const RATIO_BOUNDS: (f64, f64) = (0.01, 100.0);

impl RuntimeRefinement {
    /// A run of a task modelled by `model` on `processors` took `measured_secs`;
    /// `recorded` says whether the model came from a recorded runtime.
    pub fn record(
        &mut self,
        model: &MoldableTask,
        recorded: bool,
        processors: u32,
        measured_secs: f64,
    ) {
        if !measured_secs.is_finite() || measured_secs < 0.0 {
            return;
        }
        if recorded {
            self.measured_secs += measured_secs;
            self.modelled_secs += model.time(processors);
        } else {
            // Back to one processor through the task's own speedup.
            let speedup = model.serial_fraction
                + (1.0 - model.serial_fraction) / f64::from(processors.max(1));
            self.unrecorded_secs += measured_secs / speedup.max(f64::MIN_POSITIVE);
            self.unrecorded_runs += 1;
        }
    }

    /// Measured over modelled time of the recorded tasks that ran (1 before any).
    pub fn ratio(&self) -> f64 {
        if self.modelled_secs <= 0.0 || self.measured_secs <= 0.0 {
            return 1.0;
        }
        (self.measured_secs / self.modelled_secs).clamp(RATIO_BOUNDS.0, RATIO_BOUNDS.1)
    }

    /// The mean one-processor time of the unrecorded tasks that ran, if any ran.
    pub fn unrecorded_mean(&self) -> Option<f64> {
        (self.unrecorded_runs > 0).then(|| self.unrecorded_secs / f64::from(self.unrecorded_runs))
    }

    /// `model` refined: a recorded task's time scaled by [`Self::ratio`], an unrecorded
    /// one's replaced by [`Self::unrecorded_mean`].
    pub fn refine(&self, model: MoldableTask, recorded: bool) -> MoldableTask {
        let sequential_seconds = if recorded {
            model.sequential_seconds * self.ratio()
        } else {
            self.unrecorded_mean().unwrap_or(model.sequential_seconds)
        };
        MoldableTask {
            sequential_seconds,
            ..model
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptg::graph::tests::task;

    fn rigid(secs: f64) -> MoldableTask {
        task_model(Some(secs), 1.0, 1, None)
    }

    /// Independent rigid tasks of `secs` each.
    fn bag(n: usize, secs: f64) -> Ptg {
        Ptg::new("bag", vec![rigid(secs); n], &[]).unwrap()
    }

    /// A chain of rigid tasks.
    fn chain(secs: &[f64]) -> Ptg {
        let edges: Vec<(usize, usize)> = (1..secs.len()).map(|v| (v - 1, v)).collect();
        Ptg::new("chain", secs.iter().map(|&s| rigid(s)).collect(), &edges).unwrap()
    }

    fn first_start(p: &WorkflowPlan) -> f64 {
        p.start.iter().copied().fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn names_parse_and_unknown_ones_list_the_accepted() {
        for &policy in WorkflowPolicy::ALL {
            assert_eq!(policy.as_str().parse::<WorkflowPolicy>().unwrap(), policy);
        }
        assert_eq!(WorkflowPolicy::default().as_str(), "cafm-k-shelves");
        let e = "selfish".parse::<WorkflowPolicy>().unwrap_err().to_string();
        assert!(
            e.contains("`selfish`") && e.contains("cra-work-weight"),
            "{e}"
        );
        assert_eq!(
            WorkflowPolicy::CraWorkWeight.algorithm().unwrap().name(),
            "CRA_WORK_WEIGHT"
        );
        assert!(plan(WorkflowPolicy::RoundRobin, vec![bag(2, 1.0)], 2, 1).is_none());
    }

    #[test]
    fn cra_work_weight_bounds_a_big_workflow_to_its_share_and_runs_the_short_first() {
        // P = 4. A bag of 8 × 4 s (work 32, C* = 8) and a bag of 2 × 1 s (work 2, C* = 1).
        // Eq. (1): 1/4 + 32/68 = 0.72 → 2 processors; 1/4 + 2/68 = 0.28 → 1 processor:
        // bounds on HCPA's allocations (one processor each for rigid tasks anyway), not on
        // how many run at once. Priorities bl/C*²: 4/64 against 1/1, so both of the short
        // one's tasks start at 0, beside two of the big one's; the big one's other six
        // follow in pairs at 1, 4 and 5..8.
        let plans = plan(
            WorkflowPolicy::CraWorkWeight,
            vec![bag(8, 4.0), bag(2, 1.0)],
            4,
            7,
        )
        .unwrap();
        assert_eq!(plans[1].start, vec![0.0, 0.0], "{plans:?}");
        let mut big = plans[0].start.clone();
        big.sort_by(f64::total_cmp);
        assert_eq!(
            big,
            vec![0.0, 0.0, 1.0, 1.0, 4.0, 4.0, 5.0, 5.0],
            "{plans:?}"
        );
        assert!(plans[0].processors.iter().all(|&p| p == 1));
    }

    #[test]
    fn cafm_k_shelves_puts_the_short_workflow_in_the_first_shelf() {
        // P = 2: a chain 3 × 2 s (C* = 6) and a bag of 2 × 1 s (C* = 1 on 2 processors):
        // the short job's box comes first, so both its tasks start at 0 and the chain's
        // first task waits for them or backfills beside them.
        let plans = plan(
            WorkflowPolicy::CafmKShelves,
            vec![chain(&[2.0, 2.0, 2.0]), bag(2, 1.0)],
            2,
            3,
        )
        .unwrap();
        assert_eq!(plans[1].start, vec![0.0, 0.0], "{plans:?}");
        assert!(first_start(&plans[0]) >= 1.0 - 1e-9, "{plans:?}");
    }

    #[test]
    fn a_moldable_task_gets_its_hcpa_allocation() {
        // One moldable task of 8 s on one core, α = 0: HCPA grows it onto the processors.
        let t = task_model(Some(8.0), 1.0, 1, Some(0.0));
        let g = Ptg::new("m", vec![t], &[]).unwrap();
        let plans = plan(WorkflowPolicy::CafmKShelves, vec![g], 4, 1).unwrap();
        assert!(plans[0].processors[0] > 1, "{plans:?}");
        // A rigid task is planned on one processor.
        let plans = plan(WorkflowPolicy::CraWorkWeight, vec![bag(1, 8.0)], 4, 1).unwrap();
        assert_eq!(plans[0].processors, vec![1]);
    }

    #[test]
    fn task_models_follow_what_the_task_declares() {
        // Recorded 6 s on 2 cores with α = 0.5: T(1) = 6 / (0.5 + 0.25) = 8.
        let m = task_model(Some(6.0), 1.0, 2, Some(0.5));
        assert!((m.sequential_seconds - 8.0).abs() < 1e-12);
        assert!((m.time(2) - 6.0).abs() < 1e-12);
        assert_eq!(task_model(None, 3.0, 1, None).sequential_seconds, 3.0);
        assert_eq!(
            task_model(Some(f64::NAN), 3.0, 1, None).sequential_seconds,
            3.0
        );
        let _ = task(1.0, 0.0);
    }

    #[test]
    fn measured_runtimes_refine_the_model() {
        let mut r = RuntimeRefinement::default();
        assert_eq!(r.ratio(), 1.0);
        let recorded = rigid(10.0);
        // Two runs took 20 s and 30 s where 10 s each were modelled: ratio 2.5.
        r.record(&recorded, true, 1, 20.0);
        r.record(&recorded, true, 1, 30.0);
        assert!((r.ratio() - 2.5).abs() < 1e-12);
        assert!((r.refine(recorded, true).sequential_seconds - 25.0).abs() < 1e-12);
        // An unrecorded moldable task (α = 0) ran 3 s on 2 processors: 6 s on one.
        let unknown = task_model(None, 1.0, 1, Some(0.0));
        r.record(&unknown, false, 2, 3.0);
        assert_eq!(r.unrecorded_mean(), Some(6.0));
        assert_eq!(r.refine(unknown, false).sequential_seconds, 6.0);
        // Nonsense is ignored; the ratio stays bounded.
        r.record(&recorded, true, 1, f64::NAN);
        r.record(&recorded, true, 1, 1e12);
        assert_eq!(r.ratio(), 100.0);
    }
}
