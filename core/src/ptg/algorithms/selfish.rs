//! SELFISH and its two variants (§4.1): every PTG gets the HCPA allocation it would have
//! alone on the whole cluster, then all tasks of all PTGs are list-scheduled together as
//! early as possible, by decreasing bottom level (SELFISH), by increasing `C*_max_i` then
//! decreasing bottom level (SELFISH_ORDER: short PTGs first), or by decreasing
//! `bl_ij / (C*_max_i)²` (SELFISH_WEIGHT). Ties are broken randomly.

use rand::RngCore;

use super::{Instance, MultiPtgAlgorithm, TaskOrder};
use crate::ptg::list::schedule_in_priority_order;
use crate::ptg::schedule::Schedule;

/// SELFISH, SELFISH_ORDER or SELFISH_WEIGHT, by the list order.
#[derive(Debug, Clone, Copy)]
pub struct Selfish {
    /// How tasks are ordered in the list.
    pub order: TaskOrder,
}

impl MultiPtgAlgorithm for Selfish {
    fn name(&self) -> &'static str {
        match self.order {
            TaskOrder::BottomLevel => "SELFISH",
            TaskOrder::ShortestPtgFirst => "SELFISH_ORDER",
            TaskOrder::WeightedBottomLevel => "SELFISH_WEIGHT",
        }
    }

    fn schedule(&self, instance: &Instance, rng: &mut dyn RngCore) -> Schedule {
        let graphs = instance.graphs();
        let allocations: Vec<&[u32]> = instance
            .ptgs
            .iter()
            .map(|p| p.alone.allocation.as_slice())
            .collect();
        let bottom_levels: Vec<Vec<f64>> = instance
            .ptgs
            .iter()
            .map(|p| p.alone.bottom_levels.clone())
            .collect();
        let priorities = self.order.priorities(instance, &bottom_levels, rng);
        schedule_in_priority_order(&graphs, &allocations, &priorities, instance.processors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptg::algorithms::tests::instance;
    use crate::ptg::graph::tests::task;
    use crate::ptg::graph::Ptg;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// A long single task (100 s, α = 1: it never parallelizes) and a short one (10 s,
    /// α = 1), on one processor: each is alone a one-task PTG of allocation 1.
    fn long_and_short() -> crate::ptg::algorithms::Instance {
        let long = Ptg::new("long", vec![task(100.0, 1.0)], &[]).unwrap();
        let short = Ptg::new("short", vec![task(10.0, 1.0)], &[]).unwrap();
        instance(vec![long, short], 1)
    }

    #[test]
    fn selfish_runs_the_long_ptg_first_and_order_the_short_one() {
        let inst = long_and_short();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        // SELFISH: bottom levels 100 and 10, so the long task first: the short PTG ends at
        // 110, stretch 11. Average stretch (100 + 110) / (100 + 10).
        let s = Selfish {
            order: TaskOrder::BottomLevel,
        }
        .schedule(&inst, &mut rng);
        assert_eq!(s.placements[1][0].start, 100.0);
        // SELFISH_ORDER: C* = 100 and 10, so the short PTG first: stretches 1.1 and 1.
        let o = Selfish {
            order: TaskOrder::ShortestPtgFirst,
        }
        .schedule(&inst, &mut rng);
        assert_eq!(o.placements[1][0].start, 0.0);
        assert_eq!(o.placements[0][0].start, 10.0);
        // SELFISH_WEIGHT: 100/100² = 0.01 < 10/10² = 0.1, so the short one first too.
        let w = Selfish {
            order: TaskOrder::WeightedBottomLevel,
        }
        .schedule(&inst, &mut rng);
        assert_eq!(w.placements[1][0].start, 0.0);
    }

    #[test]
    fn ties_are_broken_randomly() {
        // Two identical one-task PTGs on one processor: either may go first.
        let g = || Ptg::new("same", vec![task(10.0, 1.0)], &[]).unwrap();
        let inst = instance(vec![g(), g()], 1);
        let firsts: std::collections::BTreeSet<usize> = (0..32)
            .map(|seed| {
                let s = Selfish {
                    order: TaskOrder::BottomLevel,
                }
                .schedule(&inst, &mut ChaCha8Rng::seed_from_u64(seed));
                usize::from(s.placements[0][0].start > 0.0)
            })
            .collect();
        assert_eq!(firsts.len(), 2);
    }
}
