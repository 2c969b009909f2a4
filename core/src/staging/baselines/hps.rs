//! HPS (Khanna et al., CCGrid 2005; paper Section 4): the hypergraph partition of Het-HPS'
//! first phase mapped block b → node b as is, without the heterogeneous refinement. Tasks
//! inside a node are ordered the same way as in Het-HPS, so the comparison isolates the
//! mapping.

use crate::staging::error::StagingError;
use crate::staging::het_hps::initial_mapping;
use crate::staging::model::{StagingPlatform, Workload};
use crate::staging::ordering::order_by_ect;
use crate::staging::policy::{validate, StagingPlan, StagingPolicy};

/// The HPS planner.
#[derive(Debug, Clone)]
pub(crate) struct Hps {
    pub(crate) epsilon: f64,
}

impl Default for Hps {
    fn default() -> Self {
        Self { epsilon: 0.03 }
    }
}

impl StagingPolicy for Hps {
    fn name(&self) -> &'static str {
        "hps"
    }

    fn plan(
        &self,
        workload: &Workload,
        platform: &StagingPlatform,
        seed: u64,
    ) -> Result<StagingPlan, StagingError> {
        validate(workload, platform)?;
        let node_of = initial_mapping(workload, platform, self.epsilon, seed, None)?;
        Ok(StagingPlan::PerNode(order_by_ect(
            workload, platform, &node_of,
        )))
    }
}
