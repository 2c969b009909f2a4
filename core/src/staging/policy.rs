//! The planner interface shared by Het-HPS and every baseline: a policy takes a batch of
//! tasks (with the files they read) and a platform (nodes with speeds and bandwidths,
//! storage nodes) and returns which node runs which task in which order. The live manager
//! and the simulator call the same policies; adding one touches one file plus one line in
//! [`StagingAlgorithm`](super::StagingAlgorithm).

use crate::staging::error::StagingError;
use crate::staging::model::{StagingPlatform, TaskId, Workload};

/// How the tasks reach the nodes.
#[derive(Debug, Clone, PartialEq)]
pub enum StagingPlan {
    /// `lists[i]` is the ordered task list of node i (nodes in [`StagingPlatform::nodes`] order).
    PerNode(Vec<Vec<TaskId>>),
    /// One queue; each node takes the next task when it becomes idle (SJF).
    SharedQueue(Vec<TaskId>),
    /// No plan up front: at every scheduling event an [`crate::staging::OnlineMct`] with
    /// this rule picks tasks for the idle nodes (the paper's MinMin, MaxMin, Sufferage).
    Online {
        /// The selection rule.
        rule: crate::staging::MctSelection,
        /// Only idle nodes are candidates (a sensitivity variant; the default lets a task
        /// wait for a busy node).
        idle_only: bool,
    },
}

impl StagingPlan {
    /// The node each task is planned on, if the plan is static.
    #[cfg(test)]
    pub(crate) fn node_of_tasks(&self, tasks: usize) -> Option<Vec<u32>> {
        match self {
            StagingPlan::PerNode(lists) => {
                let mut node = vec![0; tasks];
                for (i, list) in lists.iter().enumerate() {
                    for &t in list {
                        node[t as usize] = i as u32;
                    }
                }
                Some(node)
            }
            StagingPlan::SharedQueue(_) | StagingPlan::Online { .. } => None,
        }
    }

    /// Every task appears exactly once (an online plan covers every task by construction).
    pub fn is_complete(&self, tasks: usize) -> bool {
        let mut seen = vec![false; tasks];
        let all: Box<dyn Iterator<Item = &TaskId>> = match self {
            StagingPlan::PerNode(lists) => Box::new(lists.iter().flatten()),
            StagingPlan::SharedQueue(q) => Box::new(q.iter()),
            StagingPlan::Online { .. } => return true,
        };
        for &t in all {
            if t as usize >= tasks || seen[t as usize] {
                return false;
            }
            seen[t as usize] = true;
        }
        seen.into_iter().all(|s| s)
    }
}

/// A staging planner.
pub trait StagingPolicy: Send + Sync {
    /// Short name used on the command line and in reports.
    fn name(&self) -> &'static str;
    /// Plans the batch. `seed` drives every random choice.
    fn plan(
        &self,
        workload: &Workload,
        platform: &StagingPlatform,
        seed: u64,
    ) -> Result<StagingPlan, StagingError>;
}

/// Checks the inputs every policy needs.
pub(crate) fn validate(
    workload: &Workload,
    platform: &StagingPlatform,
) -> Result<(), StagingError> {
    platform.validate()?;
    workload.validate(platform.storage.len())
}
