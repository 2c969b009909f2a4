//! What every file-aware MCT heuristic starts from, clairvoyant (`mct.rs`) or online
//! (`online_mct.rs`): per (task, node) the local read and compute time and the time to
//! fetch all of the task's files, the per-byte transfer rates, and the tasks that read
//! each file (so a file reaching a node updates only its readers).

use rayon::prelude::*;

use crate::staging::estimate::transfer_seconds_per_byte;
use crate::staging::model::{NodeInfo, StagingPlatform, TaskId, Workload};

/// The starting costs of a batch on a platform's nodes (k nodes).
pub(super) struct MctCosts {
    /// `fixed[t * k + i]`: local read and compute of task t on node i.
    pub(super) fixed: Vec<f64>,
    /// `transfer[t * k + i]`: fetching every file of task t to node i.
    pub(super) transfer: Vec<f64>,
    /// `rate[i][p]`: seconds per byte from storage node p to node i.
    pub(super) rate: Vec<Vec<f64>>,
    /// `readers[f]`: the tasks that read file f.
    pub(super) readers: Vec<Vec<TaskId>>,
}

impl MctCosts {
    /// The costs of `workload` on `nodes` (the platform's, in its order).
    pub(super) fn of(workload: &Workload, platform: &StagingPlatform, nodes: &[NodeInfo]) -> Self {
        let rate: Vec<Vec<f64>> = nodes
            .iter()
            .map(|node| {
                (0..platform.storage.len() as u32)
                    .map(|p| transfer_seconds_per_byte(platform, node, p))
                    .collect()
            })
            .collect();
        let mut readers: Vec<Vec<TaskId>> = vec![Vec::new(); workload.files.len()];
        for (t, task) in workload.tasks.iter().enumerate() {
            for &f in &task.files {
                readers[f as usize].push(t as TaskId);
            }
        }
        let (fixed, transfer): (Vec<f64>, Vec<f64>) = (0..workload.tasks.len())
            .into_par_iter()
            .flat_map_iter(|t| {
                let rate = &rate;
                let bytes = workload.task_bytes(t as TaskId) as f64;
                let task = &workload.tasks[t];
                nodes.iter().enumerate().map(move |(i, node)| {
                    let tr: f64 = task
                        .files
                        .iter()
                        .map(|&f| {
                            let file = &workload.files[f as usize];
                            file.size_bytes as f64 * rate[i][file.storage as usize]
                        })
                        .sum();
                    (bytes * node.local_seconds_per_byte(), tr)
                })
            })
            .unzip();
        MctCosts {
            fixed,
            transfer,
            rate,
            readers,
        }
    }
}
