//! Co-runner Affinity based Round-Robin (Section 5.2.2): the applications on a platform
//! take turns; in its turn an application places its fastest feasible combination on up
//! to P_unit nodes.

use rand::RngCore;

use super::{MappingState, SecondLevelPolicy};
use crate::sched::settings::SchedulerSettings;

#[derive(Debug)]
struct CoRunnerAffinityRoundRobin {
    p_unit: u32,
}

pub(super) fn build(settings: &SchedulerSettings) -> Box<dyn SecondLevelPolicy> {
    Box::new(CoRunnerAffinityRoundRobin {
        p_unit: settings.p_unit.max(1),
    })
}

impl SecondLevelPolicy for CoRunnerAffinityRoundRobin {
    fn place(&self, state: &mut MappingState, _: &mut dyn RngCore) {
        loop {
            let open = state.open();
            if open.is_empty() {
                break;
            }
            for a in open {
                if state.done[a] {
                    continue;
                }
                match state.best_for(a) {
                    Some(combo) => {
                        state.place(combo, self.p_unit);
                    }
                    None => state.done[a] = true,
                }
            }
        }
    }
}
