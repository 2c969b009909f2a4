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
//!
//! Everything a move's evaluation needs is kept as the mapping changes (a gain cache): the
//! pin counts per (node, file), the loads per node and storage node, and per task both what
//! leaving its node saves (its private files there: those no other task of the node reads)
//! and what joining each other node adds. A move updates only what it touches: the tasks
//! sharing one of the moved task's files whose count on a node crossed 0↔1 (additions) or
//! 1↔2 (private files). Cached values are recomputed from scratch, in the same order, so
//! they are bit-for-bit what a full evaluation gives.

use crate::staging::estimate::transfer_seconds_per_byte;
use crate::staging::model::{NodeInfo, StagingPlatform, TaskId, Workload};

/// Mapping plus the per-node and per-storage loads of eq. 4–7.
pub(crate) struct MappingCost<'w> {
    workload: &'w Workload,
    storage_seconds_per_byte: Vec<f64>,
    /// [node][storage] seconds per byte of a transfer from the storage node (1/NBW_{i,p}).
    transfer: Vec<Vec<f64>>,
    local: Vec<f64>,
    task_bytes: Vec<f64>,
    pub(crate) node_of: Vec<u32>,
    /// Number of tasks on node i that read file f, at [i * files + f].
    readers: Vec<u32>,
    pub(crate) exec: Vec<f64>,
    pub(crate) io: Vec<f64>,
    /// Tasks reading each file (to invalidate cached additions).
    tasks_of_file: Vec<Vec<TaskId>>,
    /// Cached increase of Exec(P_i) if task t joined node i, at [t * nodes + i]
    /// (NaN = stale); valid until a file of t appears on or vanishes from node i.
    add_exec: Vec<f64>,
    /// Cached increase of IO(S_p) for the same move, at [(t * nodes + i) * storage + p].
    add_io: Vec<f32>,
    /// What task t saves on its node's link: size(f)/NBW of each private file, in the
    /// task's file order (always current).
    leave_terms: Vec<Vec<f64>>,
    /// The decrease of IO(S_p) if task t left its node, at [t * storage + p].
    leave_io: Vec<f64>,
    /// Tasks whose leaving terms were recomputed since [`MappingCost::take_changed`].
    changed: Vec<TaskId>,
    /// How many of task t's files node i holds (readers > 0), at [t * nodes + i]; kept
    /// only for tasks with at most `u16::MAX` files (`far_io` is NaN for the others).
    near: Vec<u16>,
    /// The increase of IO(S_p) if task t joined a node holding none of its files, at
    /// [t * storage + p], summed as `evaluate_move` sums it (NaN: not kept).
    far_io: Vec<f32>,
}

/// The effect of a tentative move on the objective.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MoveEffect {
    pub(crate) objective: f64,
    pub(crate) exec_from: f64,
    pub(crate) exec_to: f64,
}

impl<'w> MappingCost<'w> {
    pub(crate) fn new(
        workload: &'w Workload,
        platform: &StagingPlatform,
        node_of: Vec<u32>,
    ) -> Self {
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
            node_of: vec![u32::MAX; workload.tasks.len()],
            tasks_of_file: {
                let mut t = vec![Vec::new(); workload.files.len()];
                for (i, task) in workload.tasks.iter().enumerate() {
                    for &f in &task.files {
                        t[f as usize].push(i as TaskId);
                    }
                }
                t
            },
            add_exec: vec![f64::NAN; workload.tasks.len() * nodes.len()],
            add_io: vec![0.0; workload.tasks.len() * nodes.len() * platform.storage.len()],
            leave_terms: vec![Vec::new(); workload.tasks.len()],
            leave_io: vec![0.0; workload.tasks.len() * platform.storage.len()],
            changed: Vec::new(),
            near: vec![0; workload.tasks.len() * nodes.len()],
            far_io: vec![0.0; workload.tasks.len() * platform.storage.len()],
        };
        cost.fill_far_io();
        for (t, &i) in node_of.iter().enumerate() {
            cost.add(t as TaskId, i);
        }
        for t in 0..workload.tasks.len() as TaskId {
            cost.refresh_leave(t);
        }
        cost.changed.clear();
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
            let r = *r;
            if r == 2 {
                self.refresh_other_reader(f, iu, t);
            }
            if r == 1 {
                self.invalidate(f, iu, true);
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
            let r = *r;
            if r == 1 {
                self.refresh_other_reader(f, iu, t);
            }
            if r == 0 {
                self.invalidate(f, iu, false);
                let file = &self.workload.files[f as usize];
                let size = file.size_bytes as f64;
                self.exec[iu] -= size * self.transfer[iu][file.storage as usize];
                self.io[file.storage as usize] -=
                    size * self.storage_seconds_per_byte[file.storage as usize];
            }
        }
    }

    /// File f appeared on (`arrived`) or vanished from node i: marks the cached additions
    /// to node i of every task reading f as stale and counts f in or out of their `near`.
    fn invalidate(&mut self, f: u32, i: usize, arrived: bool) {
        let k = self.exec.len();
        for &u in &self.tasks_of_file[f as usize] {
            let slot = u as usize * k + i;
            self.add_exec[slot] = f64::NAN;
            if self.workload.tasks[u as usize].files.len() <= u16::MAX as usize {
                if arrived {
                    self.near[slot] += 1;
                } else {
                    self.near[slot] -= 1;
                }
            }
        }
    }

    /// Each task's IO increase on a node holding none of its files (see `far_io`).
    fn fill_far_io(&mut self) {
        let storage = self.io.len();
        for (t, task) in self.workload.tasks.iter().enumerate() {
            let io = &mut self.far_io[t * storage..(t + 1) * storage];
            if task.files.len() > u16::MAX as usize {
                io.iter_mut().for_each(|x| *x = f32::NAN);
                continue;
            }
            for &f in &task.files {
                let file = &self.workload.files[f as usize];
                let size = file.size_bytes as f64;
                io[file.storage as usize] +=
                    (size * self.storage_seconds_per_byte[file.storage as usize]) as f32;
            }
        }
    }

    /// Whether node `to` holds none of task t's files (then moving t there costs the IO
    /// [`MappingCost::io_if_far`] gives); false for tasks whose files are not counted.
    pub(crate) fn is_far(&self, t: TaskId, to: u32) -> bool {
        self.near[t as usize * self.exec.len() + to as usize] == 0
    }

    /// max_p IO(S_p) after moving task t to a node holding none of its files: exactly what
    /// `evaluate_move` gives for such a node. `None` for a task whose files are not
    /// counted in `near`.
    pub(crate) fn io_if_far(&self, t: TaskId) -> Option<f64> {
        let storage = self.io.len();
        let leave_io = &self.leave_io[t as usize * storage..(t as usize + 1) * storage];
        let far_io = &self.far_io[t as usize * storage..(t as usize + 1) * storage];
        if far_io.iter().any(|x| x.is_nan()) {
            return None;
        }
        Some(
            (0..storage)
                .map(|p| self.io[p] - leave_io[p] + far_io[p] as f64)
                .fold(f64::NEG_INFINITY, f64::max),
        )
    }

    /// File f has changed between one and two readers on node i: the task of node i other
    /// than `t` that reads it gained or lost it as a private file.
    fn refresh_other_reader(&mut self, f: u32, i: usize, t: TaskId) {
        let other = self.tasks_of_file[f as usize]
            .iter()
            .copied()
            .find(|&u| u != t && self.node_of[u as usize] as usize == i);
        if let Some(u) = other {
            self.refresh_leave(u);
        }
    }

    /// Recomputes what task t saves by leaving its node (its private files there).
    fn refresh_leave(&mut self, t: TaskId) {
        let from = self.node_of[t as usize] as usize;
        let storage = self.io.len();
        let files = self.files();
        let mut terms = std::mem::take(&mut self.leave_terms[t as usize]);
        terms.clear();
        let io = &mut self.leave_io[t as usize * storage..(t as usize + 1) * storage];
        io.iter_mut().for_each(|x| *x = 0.0);
        for &f in &self.workload.tasks[t as usize].files {
            if self.readers[from * files + f as usize] == 1 {
                let file = &self.workload.files[f as usize];
                let size = file.size_bytes as f64;
                terms.push(size * self.transfer[from][file.storage as usize]);
                io[file.storage as usize] +=
                    size * self.storage_seconds_per_byte[file.storage as usize];
            }
        }
        self.leave_terms[t as usize] = terms;
        self.changed.push(t);
    }

    /// The tasks whose leaving gain changed since the last call (moved tasks included).
    pub(crate) fn take_changed(&mut self) -> Vec<TaskId> {
        std::mem::take(&mut self.changed)
    }

    /// Exec of task t's node after t leaves it (eq. 4–6).
    pub(crate) fn exec_after_leaving(&self, t: TaskId) -> f64 {
        let from = self.node_of[t as usize] as usize;
        let mut exec_from = self.exec[from] - self.task_bytes[t as usize] * self.local[from];
        for term in &self.leave_terms[t as usize] {
            exec_from -= term;
        }
        exec_from
    }

    /// max_p IO(S_p) after task t leaves its node (before it joins another).
    pub(crate) fn io_after_leaving(&self, t: TaskId) -> f64 {
        let storage = self.io.len();
        let leave_io = &self.leave_io[t as usize * storage..(t as usize + 1) * storage];
        (0..storage)
            .map(|p| self.io[p] - leave_io[p])
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// A lower bound of Exec(P_to) with task t added: its compute there, no transfer.
    pub(crate) fn exec_with(&self, t: TaskId, to: u32) -> f64 {
        self.exec[to as usize] + self.task_bytes[t as usize] * self.local[to as usize]
    }

    /// What leaving its node saves task t, for ordering candidates: its compute there plus
    /// its private transfers.
    pub(crate) fn leave_gain(&self, t: TaskId) -> f64 {
        let from = self.node_of[t as usize] as usize;
        self.task_bytes[t as usize] * self.local[from]
            + self.leave_terms[t as usize].iter().sum::<f64>()
    }

    /// Objective after moving t (whose node's Exec would fall to `exec_from`) to node `to`,
    /// using and refreshing the cached addition. `others_max` is max Exec over the other
    /// nodes.
    pub(crate) fn evaluate_move(
        &mut self,
        t: TaskId,
        to: u32,
        others_max: f64,
        exec_from: f64,
    ) -> MoveEffect {
        let k = self.exec.len();
        let storage = self.io.len();
        let to = to as usize;
        let slot = t as usize * k + to;
        if self.add_exec[slot].is_nan() {
            let mut exec = self.task_bytes[t as usize] * self.local[to];
            let io = &mut self.add_io[slot * storage..(slot + 1) * storage];
            io.iter_mut().for_each(|x| *x = 0.0);
            let files = self.workload.files.len();
            for &f in &self.workload.tasks[t as usize].files {
                if self.readers[to * files + f as usize] == 0 {
                    let file = &self.workload.files[f as usize];
                    let size = file.size_bytes as f64;
                    exec += size * self.transfer[to][file.storage as usize];
                    io[file.storage as usize] +=
                        (size * self.storage_seconds_per_byte[file.storage as usize]) as f32;
                }
            }
            self.add_exec[slot] = exec;
        }
        let exec_to = self.exec[to] + self.add_exec[slot];
        let add_io = &self.add_io[slot * storage..(slot + 1) * storage];
        let leave_io = &self.leave_io[t as usize * storage..(t as usize + 1) * storage];
        let io_max = (0..storage)
            .map(|p| self.io[p] - leave_io[p] + add_io[p] as f64)
            .fold(f64::NEG_INFINITY, f64::max);
        MoveEffect {
            objective: others_max.max(exec_from).max(exec_to) + io_max,
            exec_from,
            exec_to,
        }
    }

    /// Moves task t to node `to`.
    pub(crate) fn move_task(&mut self, t: TaskId, to: u32) {
        self.remove(t);
        self.add(t, to);
        self.refresh_leave(t);
    }

    /// max_i Exec(P_i) + max_p IO(S_p) (eq. 3).
    pub(crate) fn objective(&self) -> f64 {
        max(&self.exec) + max(&self.io)
    }

    /// The heaviest node (lowest id on ties).
    pub(crate) fn heaviest_node(&self) -> u32 {
        let mut best = 0;
        for (i, &e) in self.exec.iter().enumerate() {
            if e > self.exec[best] {
                best = i;
            }
        }
        best as u32
    }
}

fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::platforms::four_cluster;
    use crate::staging::workload::{Overlap, WorkloadKind};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Cached move evaluations always equal the objective after really moving.
    #[test]
    fn cached_evaluation_matches_real_moves() {
        let platform = four_cluster(2, 3);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let w = WorkloadKind::Sat.generate(Overlap::High, 80, 3, &mut rng);
        let k = platform.node_count() as u32;
        let node_of = (0..80).map(|t| t % k).collect();
        let mut cost = MappingCost::new(&w, &platform, node_of);
        for _ in 0..200 {
            let t = rng.random_range(0..80u32);
            let to = rng.random_range(0..k);
            let from = cost.node_of[t as usize];
            if to == from {
                continue;
            }
            let others = (0..k as usize)
                .filter(|&i| i as u32 != from && i as u32 != to)
                .map(|i| cost.exec[i])
                .fold(0.0, f64::max);
            let exec_from = cost.exec_after_leaving(t);
            let predicted = cost.evaluate_move(t, to, others, exec_from).objective;
            cost.move_task(t, to);
            assert!((predicted - cost.objective()).abs() < 1e-6 * predicted.max(1.0));
        }
    }
}

#[cfg(test)]
#[path = "oracle_tests.rs"]
mod oracle_tests;
