//! The staging model of paper Section 3/5.2: files (size, home storage node), tasks (the
//! files they read), compute clusters of identical nodes (compute cost C_i per byte,
//! local disk bandwidth LBW_i, one network link to the storage shared by the cluster's
//! nodes) and storage nodes (I/O bandwidth IBW_p). Bandwidths are bytes per second.

use serde::{Deserialize, Serialize};

use crate::staging::error::StagingError;
use crate::staging::hypergraph::Hypergraph;

/// An input file, by index.
pub type FileId = u32;
/// A task, by index.
pub type TaskId = u32;
/// A storage node, by index.
pub type StorageId = u32;

/// One input file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataFile {
    /// Its size in bytes.
    pub size_bytes: u64,
    /// The storage node that holds it, M(f_j).
    pub storage: StorageId,
}

/// One task: the files it reads. Its compute time is Σ size × C_i on node i (eq. 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Indices into [`Workload::files`], distinct.
    pub files: Vec<FileId>,
}

/// A batch of tasks and the files they share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Every file the tasks read, indexed by file id.
    pub files: Vec<DataFile>,
    /// The tasks, indexed by task id.
    pub tasks: Vec<Task>,
}

impl Workload {
    /// Checks that every task names existing files (no repeats) and every file lives on
    /// an existing storage node.
    pub fn validate(&self, storage_nodes: usize) -> Result<(), StagingError> {
        for (f, file) in self.files.iter().enumerate() {
            if file.storage as usize >= storage_nodes {
                return Err(StagingError::InvalidWorkload(format!(
                    "file {f} is on storage node {}, but the platform has {storage_nodes}",
                    file.storage
                )));
            }
        }
        for (t, task) in self.tasks.iter().enumerate() {
            let mut seen = task.files.clone();
            seen.sort_unstable();
            seen.dedup();
            if seen.len() != task.files.len() {
                return Err(StagingError::InvalidWorkload(format!(
                    "task {t} lists a file twice"
                )));
            }
            if let Some(&f) = task.files.iter().find(|&&f| f as usize >= self.files.len()) {
                return Err(StagingError::InvalidWorkload(format!(
                    "task {t} reads file {f}, but there are {} files",
                    self.files.len()
                )));
            }
        }
        Ok(())
    }

    /// Σ size of the task's input files.
    pub fn task_bytes(&self, t: TaskId) -> u64 {
        self.tasks[t as usize]
            .files
            .iter()
            .map(|&f| self.files[f as usize].size_bytes)
            .sum()
    }

    /// Number of tasks reading each file, s_j.
    pub fn sharers(&self) -> Vec<u32> {
        let mut s = vec![0u32; self.files.len()];
        for task in &self.tasks {
            for &f in &task.files {
                s[f as usize] += 1;
            }
        }
        s
    }

    /// Fraction of file requests that ask for a file some other request already asked
    /// for: 1 − distinct files / total requests (the paper's "overlap", Section 6.1).
    pub fn overlap(&self) -> f64 {
        let requests: usize = self.tasks.iter().map(|t| t.files.len()).sum();
        let distinct = self.sharers().iter().filter(|&&s| s > 0).count();
        if requests == 0 {
            0.0
        } else {
            1.0 - distinct as f64 / requests as f64
        }
    }

    /// The task/file hypergraph (Section 5.2, Fig. 1): vertex i = task i with weight
    /// `vertex_weights[i]`, one net per file read by at least one task, weighted by its
    /// size in KiB (at least 1).
    pub fn hypergraph(&self, vertex_weights: Vec<i64>) -> Result<Hypergraph, StagingError> {
        let mut pins: Vec<Vec<u32>> = vec![Vec::new(); self.files.len()];
        for (t, task) in self.tasks.iter().enumerate() {
            for &f in &task.files {
                pins[f as usize].push(t as u32);
            }
        }
        let mut nets = Vec::new();
        let mut weights = Vec::new();
        for (f, p) in pins.into_iter().enumerate() {
            if !p.is_empty() {
                nets.push(p);
                weights.push((self.files[f].size_bytes.div_ceil(1024)).max(1) as i64);
            }
        }
        Hypergraph::new(vertex_weights, weights, nets)
    }
}

/// A compute cluster of identical nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputeCluster {
    /// Its name.
    pub name: String,
    /// How many nodes.
    pub nodes: u32,
    /// C_i: seconds of computation per input byte.
    pub compute_seconds_per_byte: f64,
    /// LBW_i: local disk bandwidth of each node (bytes/s).
    pub disk_bandwidth: f64,
    /// Bandwidth of the cluster's link to the storage (bytes/s), shared by its nodes.
    pub link_bandwidth: f64,
}

/// A storage node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageNode {
    /// IBW_p (bytes/s).
    pub io_bandwidth: f64,
}

/// The Het-HPS compute platform model: compute clusters and the storage nodes their files
/// live on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagingPlatform {
    /// The compute clusters.
    pub clusters: Vec<ComputeCluster>,
    /// The storage nodes.
    pub storage: Vec<StorageNode>,
}

/// One compute node as the planners see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeInfo {
    /// Its cluster, by index.
    pub cluster: u32,
    /// C_i (s/byte).
    pub compute_seconds_per_byte: f64,
    /// LBW_i (bytes/s).
    pub disk_bandwidth: f64,
    /// NBW_i: the node's share of its cluster's link when all nodes transfer at once
    /// (the paper's worst case, Section 6.3), bytes/s.
    pub network_bandwidth: f64,
}

impl NodeInfo {
    /// Seconds to read and process one byte locally: 1/LBW_i + C_i (eq. 5).
    pub fn local_seconds_per_byte(&self) -> f64 {
        1.0 / self.disk_bandwidth + self.compute_seconds_per_byte
    }
}

impl StagingPlatform {
    /// Rejects platforms without nodes or storage and non-positive rates.
    pub fn validate(&self) -> Result<(), StagingError> {
        if self.clusters.iter().map(|c| c.nodes).sum::<u32>() == 0 {
            return Err(StagingError::InvalidPlatform("no compute nodes".into()));
        }
        if self.storage.is_empty() {
            return Err(StagingError::InvalidPlatform("no storage nodes".into()));
        }
        for c in &self.clusters {
            for (what, x) in [
                ("compute_seconds_per_byte", c.compute_seconds_per_byte),
                ("disk_bandwidth", c.disk_bandwidth),
                ("link_bandwidth", c.link_bandwidth),
            ] {
                if !x.is_finite() || x <= 0.0 {
                    return Err(StagingError::InvalidPlatform(format!(
                        "cluster `{}`: {what} must be positive, got {x}",
                        c.name
                    )));
                }
            }
        }
        for (p, s) in self.storage.iter().enumerate() {
            if !s.io_bandwidth.is_finite() || s.io_bandwidth <= 0.0 {
                return Err(StagingError::InvalidPlatform(format!(
                    "storage node {p}: io_bandwidth must be positive, got {}",
                    s.io_bandwidth
                )));
            }
        }
        Ok(())
    }

    /// All compute nodes, cluster by cluster.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.clusters
            .iter()
            .enumerate()
            .flat_map(|(ci, c)| {
                (0..c.nodes).map(move |_| NodeInfo {
                    cluster: ci as u32,
                    compute_seconds_per_byte: c.compute_seconds_per_byte,
                    disk_bandwidth: c.disk_bandwidth,
                    network_bandwidth: c.link_bandwidth / c.nodes as f64,
                })
            })
            .collect()
    }

    /// Nodes of all clusters together.
    pub fn node_count(&self) -> usize {
        self.clusters.iter().map(|c| c.nodes as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_checks_and_hypergraph() {
        let w = Workload {
            files: vec![
                DataFile {
                    size_bytes: 2048,
                    storage: 0,
                },
                DataFile {
                    size_bytes: 10,
                    storage: 1,
                },
                DataFile {
                    size_bytes: 5,
                    storage: 1,
                },
            ],
            tasks: vec![Task { files: vec![0, 1] }, Task { files: vec![0] }],
        };
        assert!(w.validate(2).is_ok());
        assert!(w.validate(1).is_err());
        assert_eq!(w.sharers(), vec![2, 1, 0]);
        assert!((w.overlap() - (1.0 - 2.0 / 3.0)).abs() < 1e-12);
        let hg = w.hypergraph(vec![1, 1]).unwrap();
        assert_eq!(hg.num_nets(), 2);
        assert_eq!(hg.net_weights(), &[2, 1]);
        let bad = Workload {
            files: w.files.clone(),
            tasks: vec![Task { files: vec![3] }],
        };
        assert!(bad.validate(2).is_err());
    }
}
