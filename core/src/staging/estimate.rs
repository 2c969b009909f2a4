//! Cost estimates shared by the planners: the time to move one byte of a file from its
//! storage node to a compute node, and the probabilistic task weights of eq. 1–2.

use crate::staging::model::{NodeInfo, StagingPlatform, StorageId, TaskId, Workload};

/// Seconds per byte to bring a file from storage node p to a node: the slower of the
/// node's network share NBW_i and the storage's IBW_p.
pub(crate) fn transfer_seconds_per_byte(
    platform: &StagingPlatform,
    node: &NodeInfo,
    storage: StorageId,
) -> f64 {
    let ibw = platform.storage[storage as usize].io_bandwidth;
    1.0 / node.network_bandwidth.min(ibw)
}

/// ExecT_i of eq. 2 for every task, assuming homogeneous nodes (HPS, Section 5.2):
/// ExecT_i = Σ_{f_j ∈ F_i} size(f_j)·(Tr_j + 1/LBW + C), with
/// Tr_j = P_FNE/BW + (1 − P_FNE)(1 − P_FE)/BW (eq. 1), P_FNE = 1/s_j, P_FE = 1/K,
/// BW the minimum I/O or network bandwidth, LBW and C averaged over the nodes.
pub(crate) fn expected_execution_times(
    workload: &Workload,
    platform: &StagingPlatform,
) -> Vec<f64> {
    let nodes = platform.nodes();
    let k = nodes.len() as f64;
    let bw = nodes
        .iter()
        .map(|n| n.network_bandwidth)
        .chain(platform.storage.iter().map(|s| s.io_bandwidth))
        .fold(f64::INFINITY, f64::min);
    let local = nodes
        .iter()
        .map(NodeInfo::local_seconds_per_byte)
        .sum::<f64>()
        / k;
    let sharers = workload.sharers();
    (0..workload.tasks.len() as TaskId)
        .map(|t| {
            workload.tasks[t as usize]
                .files
                .iter()
                .map(|&f| {
                    let p_fne = 1.0 / sharers[f as usize].max(1) as f64; // P_FNE = 1/s_j
                    let p_fe = 1.0 / k; // P_FE = 1/K
                    let tr = p_fne / bw + (1.0 - p_fne) * (1.0 - p_fe) / bw; // eq. 1
                    workload.files[f as usize].size_bytes as f64 * (tr + local) // eq. 2
                })
                .sum()
        })
        .collect()
}

/// The eq. 2 weights as positive integers (microseconds) for the partitioner.
pub(crate) fn partition_weights(workload: &Workload, platform: &StagingPlatform) -> Vec<i64> {
    expected_execution_times(workload, platform)
        .into_iter()
        .map(|s| ((s * 1e6).round() as i64).max(1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::model::{ComputeCluster, DataFile, StorageNode, Task};

    #[test]
    fn eq1_and_eq2_by_hand() {
        let platform = StagingPlatform {
            clusters: vec![ComputeCluster {
                name: "a".into(),
                nodes: 2,
                compute_seconds_per_byte: 0.5,
                disk_bandwidth: 2.0,
                link_bandwidth: 4.0,
            }],
            storage: vec![StorageNode { io_bandwidth: 10.0 }],
        };
        let w = Workload {
            files: vec![
                DataFile {
                    size_bytes: 1,
                    storage: 0,
                },
                DataFile {
                    size_bytes: 2,
                    storage: 0,
                },
            ],
            tasks: vec![Task { files: vec![0, 1] }, Task { files: vec![1] }],
        };
        // BW = min(4/2, 10) = 2; local = 1/2 + 0.5 = 1; K = 2.
        // file 0: s=1 → Tr = 1/2; file 1: s=2 → Tr = 0.5/2 + 0.5·0.5/2 = 0.375.
        let e = expected_execution_times(&w, &platform);
        assert!((e[0] - (1.0 * 1.5 + 2.0 * 1.375)).abs() < 1e-12);
        assert!((e[1] - 2.0 * 1.375).abs() < 1e-12);
    }
}
