//! The platforms of the paper's experiments (Sections 6.2–6.3), as [`StagingPlatform`] values.

use crate::staging::model::{ComputeCluster, StagingPlatform, StorageNode};

const MB: f64 = 1_048_576.0;
/// 0.001 s of processing per MB of input (Section 6.1).
const SECONDS_PER_BYTE: f64 = 0.001 / MB;
/// 100 Mbit/s in bytes/s.
const MBPS_100: f64 = 100e6 / 8.0;

/// OSC + DC (Section 6.2): `osc_nodes` OSC nodes and `dc_nodes` DC nodes (1.2× faster),
/// each cluster behind its own 100 Mbps link to 6 storage nodes with 18–25 MB/s disks.
/// `dc_bandwidth_factor` scales the DC link (Fig. 3 varies it from 1 to 4).
pub fn osc_dc(osc_nodes: u32, dc_nodes: u32, dc_bandwidth_factor: f64) -> StagingPlatform {
    StagingPlatform {
        clusters: vec![
            ComputeCluster {
                name: "OSC".into(),
                nodes: osc_nodes,
                compute_seconds_per_byte: SECONDS_PER_BYTE,
                disk_bandwidth: 40.0 * MB,
                link_bandwidth: MBPS_100,
            },
            ComputeCluster {
                name: "DC".into(),
                nodes: dc_nodes,
                compute_seconds_per_byte: SECONDS_PER_BYTE / 1.2,
                disk_bandwidth: 40.0 * MB,
                link_bandwidth: MBPS_100 * dc_bandwidth_factor,
            },
        ],
        storage: (0..6)
            .map(|p| StorageNode {
                io_bandwidth: (18.0 + 7.0 * p as f64 / 5.0) * MB,
            })
            .collect(),
    }
}

/// The 4-cluster simulation setup (Section 6.3): links of 12.5, 25, 37.5 and 50 MB/s
/// (1:4), 40 MB/s disks on compute and storage nodes, `nodes_per_cluster` nodes each and
/// `storage_nodes` storage nodes.
pub fn four_cluster(nodes_per_cluster: u32, storage_nodes: u32) -> StagingPlatform {
    StagingPlatform {
        clusters: (1..=4)
            .map(|c| ComputeCluster {
                name: format!("C{c}"),
                nodes: nodes_per_cluster,
                compute_seconds_per_byte: SECONDS_PER_BYTE,
                disk_bandwidth: 40.0 * MB,
                link_bandwidth: 12.5 * MB * c as f64,
            })
            .collect(),
        storage: (0..storage_nodes)
            .map(|_| StorageNode {
                io_bandwidth: 40.0 * MB,
            })
            .collect(),
    }
}
