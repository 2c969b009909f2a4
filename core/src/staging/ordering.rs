//! Ordering of the tasks inside each node's group (paper Section 5.3): whenever a node
//! becomes free (earliest first), it runs the task of its group with the earliest
//! expected completion time. A task's staging time is, for each storage node it needs
//! bytes from, the wait until that storage node is free plus the transfer time; the chosen
//! task's transfers are then added to those storage nodes' wait times. Files already on
//! the node cost nothing.

use crate::staging::estimate::transfer_seconds_per_byte;
use crate::staging::model::{NodeInfo, StagingPlatform, TaskId, Workload};

/// Orders each node's tasks; `node_of[t]` is the node of task t.
pub(crate) fn order_by_ect(
    workload: &Workload,
    platform: &StagingPlatform,
    node_of: &[u32],
) -> Vec<Vec<TaskId>> {
    let nodes: Vec<NodeInfo> = platform.nodes();
    let storage = platform.storage.len();
    let mut remaining: Vec<Vec<TaskId>> = vec![Vec::new(); nodes.len()];
    for (t, &i) in node_of.iter().enumerate() {
        remaining[i as usize].push(t as TaskId);
    }
    let mut order: Vec<Vec<TaskId>> = vec![Vec::new(); nodes.len()];
    let mut free_at = vec![0.0f64; nodes.len()];
    let mut storage_wait = vec![0.0f64; storage];
    let files = workload.files.len();
    let mut present = vec![false; nodes.len() * files];
    let rate: Vec<Vec<f64>> = nodes
        .iter()
        .map(|n| {
            (0..storage as u32)
                .map(|p| transfer_seconds_per_byte(platform, n, p))
                .collect()
        })
        .collect();
    let mut per_storage = vec![0.0f64; storage];
    // The node that becomes free first, among those with work left.
    while let Some(i) = (0..nodes.len())
        .filter(|&i| !remaining[i].is_empty())
        .min_by(|&a, &b| free_at[a].total_cmp(&free_at[b]).then(a.cmp(&b)))
    {
        let now = free_at[i];
        let staging_for = |t: TaskId, per_storage: &mut [f64]| -> f64 {
            per_storage.iter_mut().for_each(|x| *x = 0.0);
            for &f in &workload.tasks[t as usize].files {
                if !present[i * files + f as usize] {
                    let file = &workload.files[f as usize];
                    per_storage[file.storage as usize] +=
                        file.size_bytes as f64 * rate[i][file.storage as usize];
                }
            }
            per_storage
                .iter()
                .enumerate()
                .filter(|(_, &x)| x > 0.0)
                .map(|(p, &x)| (storage_wait[p] - now).max(0.0) + x)
                .sum()
        };
        let local = nodes[i].local_seconds_per_byte();
        let (pos, ect) = remaining[i]
            .iter()
            .enumerate()
            .map(|(pos, &t)| {
                let ect =
                    now + staging_for(t, &mut per_storage) + workload.task_bytes(t) as f64 * local;
                (pos, ect)
            })
            .min_by(|a, b| {
                a.1.total_cmp(&b.1)
                    .then(remaining[i][a.0].cmp(&remaining[i][b.0]))
            })
            .expect("non-empty group");
        let t = remaining[i].swap_remove(pos);
        staging_for(t, &mut per_storage);
        for (p, &x) in per_storage.iter().enumerate() {
            if x > 0.0 {
                storage_wait[p] = storage_wait[p].max(now) + x;
            }
        }
        for &f in &workload.tasks[t as usize].files {
            present[i * files + f as usize] = true;
        }
        free_at[i] = ect;
        order[i].push(t);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::model::{ComputeCluster, DataFile, StorageNode, Task};

    #[test]
    fn tasks_reusing_cached_files_go_first() {
        let platform = StagingPlatform {
            clusters: vec![ComputeCluster {
                name: "c".into(),
                nodes: 1,
                compute_seconds_per_byte: 1e-9,
                disk_bandwidth: 1e9,
                link_bandwidth: 1e6,
            }],
            storage: vec![StorageNode { io_bandwidth: 1e6 }],
        };
        let big = DataFile {
            size_bytes: 1_000_000,
            storage: 0,
        };
        let w = Workload {
            files: vec![
                big.clone(),
                big.clone(),
                DataFile {
                    size_bytes: 500_000,
                    storage: 0,
                },
            ],
            tasks: vec![
                Task { files: vec![0, 1] },
                Task { files: vec![2] },
                Task { files: vec![2, 0] },
            ],
        };
        // Task 1 is cheapest first; then task 2 reuses file 2 and only needs file 0.
        assert_eq!(order_by_ect(&w, &platform, &[0, 0, 0]), vec![vec![1, 2, 0]]);
    }
}
