//! Shortest Job First (paper Section 4): tasks sorted by expected execution time, every
//! file assumed remote (transfer at the mean node bandwidth, plus local read and compute
//! at the mean node speed); the next idle node takes the next task.

use crate::staging::error::StagingError;
use crate::staging::estimate::transfer_seconds_per_byte;
use crate::staging::model::{StagingPlatform, TaskId, Workload};
use crate::staging::policy::{validate, StagingPlan, StagingPolicy};

/// The SJF planner.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sjf;

impl StagingPolicy for Sjf {
    fn name(&self) -> &'static str {
        "sjf"
    }

    fn plan(
        &self,
        workload: &Workload,
        platform: &StagingPlatform,
        _seed: u64,
    ) -> Result<StagingPlan, StagingError> {
        validate(workload, platform)?;
        let nodes = platform.nodes();
        let k = nodes.len() as f64;
        let local = nodes
            .iter()
            .map(|n| n.local_seconds_per_byte())
            .sum::<f64>()
            / k;
        let transfer: Vec<f64> = (0..platform.storage.len() as u32)
            .map(|p| {
                nodes
                    .iter()
                    .map(|n| transfer_seconds_per_byte(platform, n, p))
                    .sum::<f64>()
                    / k
            })
            .collect();
        let expected: Vec<f64> = workload
            .tasks
            .iter()
            .map(|task| {
                task.files
                    .iter()
                    .map(|&f| {
                        let file = &workload.files[f as usize];
                        file.size_bytes as f64 * (transfer[file.storage as usize] + local)
                    })
                    .sum()
            })
            .collect();
        let mut order: Vec<TaskId> = (0..workload.tasks.len() as TaskId).collect();
        order.sort_by(|&a, &b| {
            expected[a as usize]
                .total_cmp(&expected[b as usize])
                .then(a.cmp(&b))
        });
        Ok(StagingPlan::SharedQueue(order))
    }
}
