//! The execution-time model of paper Section 5.2, kept incrementally for a task → node
//! mapping:
//!
//! - Comp(P_i) = Σ_{t ∈ P_i} Σ_{f ∈ F_t} size(f)·(1/LBW_i + C_i)               (eq. 5)
//! - Network(P_i) = Σ_{f ∈ Files(P_i)} size(f)/NBW_{i,M(f)}                     (eq. 6)
//! - Exec(P_i) = Comp(P_i) + Network(P_i)                                        (eq. 4)
//! - IO(S_p) = Σ size(f)/IBW_p over the transfers of files on p                  (eq. 7)
//! - ExecutionTime = max_i Exec(P_i) + max_p IO(S_p)                             (eq. 3)
//!
//! Eq. 7 read literally sums over the files resident on S_p, which no mapping changes; we
//! count each transfer of a file to a node that needs it (λ_j transfers of file j), the
//! quantity the mapping does change and the one that loads the storage node.

use crate::staging::estimate::transfer_seconds_per_byte;
use crate::staging::model::{NodeInfo, Platform, TaskId, Workload};

/// Mapping plus the per-node and per-storage loads of eq. 4–7.
pub(crate) struct MappingCost<'w> {
    workload: &'w Workload,
    storage_seconds_per_byte: Vec<f64>,
    /// [node][storage] seconds per byte of a transfer from the storage node (1/NBW_{i,p}).
    transfer: Vec<Vec<f64>>,
    local: Vec<f64>,
    task_bytes: Vec<f64>,
    pub node_of: Vec<u32>,
    /// Number of tasks on node i that read file f, at [i * files + f].
    readers: Vec<u32>,
    pub exec: Vec<f64>,
    pub io: Vec<f64>,
}

/// The effect of a tentative move on the objective.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MoveEffect {
    pub objective: f64,
    pub exec_from: f64,
    pub exec_to: f64,
}

impl<'w> MappingCost<'w> {
    pub fn new(workload: &'w Workload, platform: &Platform, node_of: Vec<u32>) -> Self {
        let nodes: Vec<NodeInfo> = platform.nodes();
        let transfer = nodes
            .iter()
            .map(|n| {
                (0..platform.storage.len() as u32)
                    .map(|p| transfer_seconds_per_byte(platform, n, p))
                    .collect()
            })
            .collect();
        let mut cost = Self {
            workload,
            storage_seconds_per_byte: platform
                .storage
                .iter()
                .map(|s| 1.0 / s.io_bandwidth)
                .collect(),
            transfer,
            local: nodes.iter().map(NodeInfo::local_seconds_per_byte).collect(),
            task_bytes: (0..workload.tasks.len() as TaskId)
                .map(|t| workload.task_bytes(t) as f64)
                .collect(),
            readers: vec![0; nodes.len() * workload.files.len()],
            exec: vec![0.0; nodes.len()],
            io: vec![0.0; platform.storage.len()],
            node_of: vec![0; workload.tasks.len()],
        };
        for (t, &i) in node_of.iter().enumerate() {
            cost.add(t as TaskId, i);
        }
        cost
    }

    fn files(&self) -> usize {
        self.workload.files.len()
    }

    fn add(&mut self, t: TaskId, i: u32) {
        self.node_of[t as usize] = i;
        let iu = i as usize;
        self.exec[iu] += self.task_bytes[t as usize] * self.local[iu];
        let base = iu * self.files();
        for &f in &self.workload.tasks[t as usize].files {
            let r = &mut self.readers[base + f as usize];
            *r += 1;
            if *r == 1 {
                let file = &self.workload.files[f as usize];
                let size = file.size_bytes as f64;
                self.exec[iu] += size * self.transfer[iu][file.storage as usize];
                self.io[file.storage as usize] +=
                    size * self.storage_seconds_per_byte[file.storage as usize];
            }
        }
    }

    fn remove(&mut self, t: TaskId) {
        let iu = self.node_of[t as usize] as usize;
        self.exec[iu] -= self.task_bytes[t as usize] * self.local[iu];
        let base = iu * self.files();
        for &f in &self.workload.tasks[t as usize].files {
            let r = &mut self.readers[base + f as usize];
            *r -= 1;
            if *r == 0 {
                let file = &self.workload.files[f as usize];
                let size = file.size_bytes as f64;
                self.exec[iu] -= size * self.transfer[iu][file.storage as usize];
                self.io[file.storage as usize] -=
                    size * self.storage_seconds_per_byte[file.storage as usize];
            }
        }
    }

    /// Moves task t to node `to`.
    pub fn move_task(&mut self, t: TaskId, to: u32) {
        self.remove(t);
        self.add(t, to);
    }

    /// max_i Exec(P_i) + max_p IO(S_p) (eq. 3).
    pub fn objective(&self) -> f64 {
        max(&self.exec) + max(&self.io)
    }

    /// The heaviest node (lowest id on ties).
    pub fn heaviest_node(&self) -> u32 {
        let mut best = 0;
        for (i, &e) in self.exec.iter().enumerate() {
            if e > self.exec[best] {
                best = i;
            }
        }
        best as u32
    }

    /// Objective after moving t from its node to `to`, without changing anything.
    /// `others_max` is max Exec over nodes other than from and to; `io_delta` is scratch.
    pub fn evaluate(
        &self,
        t: TaskId,
        to: u32,
        others_max: f64,
        io_delta: &mut [f64],
    ) -> MoveEffect {
        let from = self.node_of[t as usize] as usize;
        let to = to as usize;
        let bytes = self.task_bytes[t as usize];
        let mut exec_from = self.exec[from] - bytes * self.local[from];
        let mut exec_to = self.exec[to] + bytes * self.local[to];
        io_delta.iter_mut().for_each(|d| *d = 0.0);
        let files = self.files();
        for &f in &self.workload.tasks[t as usize].files {
            let file = &self.workload.files[f as usize];
            let size = file.size_bytes as f64;
            let io = size * self.storage_seconds_per_byte[file.storage as usize];
            if self.readers[from * files + f as usize] == 1 {
                exec_from -= size * self.transfer[from][file.storage as usize];
                io_delta[file.storage as usize] -= io;
            }
            if self.readers[to * files + f as usize] == 0 {
                exec_to += size * self.transfer[to][file.storage as usize];
                io_delta[file.storage as usize] += io;
            }
        }
        let io_max = self
            .io
            .iter()
            .zip(io_delta.iter())
            .map(|(a, d)| a + d)
            .fold(f64::NEG_INFINITY, f64::max);
        MoveEffect {
            objective: others_max.max(exec_from).max(exec_to) + io_max,
            exec_from,
            exec_to,
        }
    }
}

fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(0.0, f64::max)
}
