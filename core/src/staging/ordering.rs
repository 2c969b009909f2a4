//! Ordering of the tasks inside each node's group (paper Section 5.3): whenever a node
//! becomes free (earliest first), it runs the task of its group with the earliest
//! expected completion time. A task's staging time is, for each storage node it needs
//! bytes from, the wait until that storage node is free plus the transfer time; the chosen
//! task's transfers are then added to those storage nodes' wait times. Files already on
//! the node cost nothing.
//!
//! The expected completion time of task t on node i at time `now` is
//! `now + Σ_{p ∈ need(t)} (wait_p + x_p(t)) + local(t)`, where `need(t)` are the storage
//! nodes t still needs bytes from, `x_p(t)` their transfer time and `wait_p` how long p is
//! still busy. Tasks with the same `need` set differ only by `Σ x_p(t) + local(t)`, which
//! changes only when one of their files arrives on the node. So each node keeps one heap
//! per `need` set, keyed by that sum and updated when a file arrives; a pick compares the
//! heaps' heads only. A pick costs O(need sets), not O(tasks of the node). The time is
//! computed as `(now + Σ_{p ∈ need} wait_p) + (Σ x_p + local)`, so within a need set it
//! never decreases with the key; ties (to the last bit) go to the smaller key, then the
//! lower task id, so a heap's head is always its set's best task.

use crate::staging::estimate::transfer_seconds_per_byte;
use crate::staging::model::{NodeInfo, StagingPlatform, TaskId, Workload};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

/// A task's place in its node's heaps: the sum the heap is keyed by, then the task id.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Keyed {
    cost: f64,
    task: TaskId,
    version: u32,
}

impl Eq for Keyed {}

impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cost
            .total_cmp(&other.cost)
            .then(self.task.cmp(&other.task))
    }
}

/// What ordering reads of the workload and the platform, and what it has decided so far.
struct State<'a> {
    workload: &'a Workload,
    files: usize,
    /// `present[i * files + f]`: file f is on node i (staged there by an earlier task).
    present: Vec<bool>,
    /// Seconds per byte from each storage node, per compute node.
    rate: Vec<Vec<f64>>,
    /// Local disk and compute seconds per byte, per compute node.
    local: Vec<f64>,
    storage_wait: Vec<f64>,
}

impl<'a> State<'a> {
    /// Nothing staged yet, every storage node free.
    fn new(workload: &'a Workload, platform: &StagingPlatform, nodes: &[NodeInfo]) -> Self {
        let storage = platform.storage.len();
        let files = workload.files.len();
        State {
            workload,
            files,
            present: vec![false; nodes.len() * files],
            rate: nodes
                .iter()
                .map(|n| {
                    (0..storage as u32)
                        .map(|p| transfer_seconds_per_byte(platform, n, p))
                        .collect()
                })
                .collect(),
            local: nodes.iter().map(|n| n.local_seconds_per_byte()).collect(),
            storage_wait: vec![0.0; storage],
        }
    }

    /// Transfer seconds task `t` needs from each storage node to reach node `i`.
    fn transfers(&self, i: usize, t: TaskId, per_storage: &mut [f64]) {
        per_storage.iter_mut().for_each(|x| *x = 0.0);
        for &f in &self.workload.tasks[t as usize].files {
            if !self.present[i * self.files + f as usize] {
                let file = &self.workload.files[f as usize];
                per_storage[file.storage as usize] +=
                    file.size_bytes as f64 * self.rate[i][file.storage as usize];
            }
        }
    }

    /// The expected completion time, at `now`, of a task that needs `need` and whose
    /// transfers and local work take `cost` seconds.
    fn ect(&self, need: &[u32], cost: f64, now: f64) -> f64 {
        let ready = need.iter().fold(now, |at, &p| {
            at + (self.storage_wait[p as usize] - now).max(0.0)
        });
        ready + cost
    }

    /// `t`'s need set and heap key on node `i`.
    fn key(&self, i: usize, t: TaskId, per_storage: &mut [f64]) -> (Vec<u32>, f64) {
        self.transfers(i, t, per_storage);
        let need: Vec<u32> = (0..per_storage.len() as u32)
            .filter(|&p| per_storage[p as usize] > 0.0)
            .collect();
        let cost =
            per_storage.iter().sum::<f64>() + self.workload.task_bytes(t) as f64 * self.local[i];
        (need, cost)
    }
}

/// One node's remaining tasks, by need set.
#[derive(Default)]
struct NodeQueue {
    heaps: HashMap<Vec<u32>, BinaryHeap<Reverse<Keyed>>>,
    /// Remaining tasks of the node that read each file.
    readers: HashMap<u32, Vec<TaskId>>,
    left: usize,
}

/// Orders each node's tasks; `node_of[t]` is the node of task t.
pub(crate) fn order_by_ect(
    workload: &Workload,
    platform: &StagingPlatform,
    node_of: &[u32],
) -> Vec<Vec<TaskId>> {
    let nodes: Vec<NodeInfo> = platform.nodes();
    let storage = platform.storage.len();
    let files = workload.files.len();
    let mut st = State::new(workload, platform, &nodes);
    let mut per_storage = vec![0.0f64; storage];
    // version[t]: the heap entry of t that is current; u32::MAX once t is ordered.
    let mut version = vec![0u32; node_of.len()];
    let mut queues: Vec<NodeQueue> = (0..nodes.len()).map(|_| NodeQueue::default()).collect();
    for (t, &i) in node_of.iter().enumerate() {
        let (i, t) = (i as usize, t as TaskId);
        let (need, cost) = st.key(i, t, &mut per_storage);
        let q = &mut queues[i];
        q.heaps.entry(need).or_default().push(Reverse(Keyed {
            cost,
            task: t,
            version: 0,
        }));
        for &f in &workload.tasks[t as usize].files {
            q.readers.entry(f).or_default().push(t);
        }
        q.left += 1;
    }
    let mut order: Vec<Vec<TaskId>> = vec![Vec::new(); nodes.len()];
    let mut free_at = vec![0.0f64; nodes.len()];
    // The node that becomes free first, among those with work left.
    while let Some(i) = (0..nodes.len())
        .filter(|&i| queues[i].left > 0)
        .min_by(|&a, &b| free_at[a].total_cmp(&free_at[b]).then(a.cmp(&b)))
    {
        let now = free_at[i];
        let (t, ect) = pick(&st, &mut queues[i], &version, now);
        version[t as usize] = u32::MAX;
        queues[i].left -= 1;
        st.transfers(i, t, &mut per_storage);
        for (p, &x) in per_storage.iter().enumerate() {
            if x > 0.0 {
                st.storage_wait[p] = st.storage_wait[p].max(now) + x;
            }
        }
        for &f in &workload.tasks[t as usize].files {
            if std::mem::replace(&mut st.present[i * files + f as usize], true) {
                continue;
            }
            // The file arrived: its other readers on this node need less now.
            let readers = queues[i].readers.remove(&f).unwrap_or_default();
            for r in readers {
                if version[r as usize] == u32::MAX {
                    continue;
                }
                version[r as usize] += 1;
                let (need, cost) = st.key(i, r, &mut per_storage);
                queues[i]
                    .heaps
                    .entry(need)
                    .or_default()
                    .push(Reverse(Keyed {
                        cost,
                        task: r,
                        version: version[r as usize],
                    }));
            }
        }
        free_at[i] = ect;
        order[i].push(t);
    }
    order
}

/// The task of `q` with the earliest expected completion (then the smaller key, then the
/// lower id): the best of the need sets' heap heads.
fn pick(st: &State<'_>, q: &mut NodeQueue, version: &[u32], now: f64) -> (TaskId, f64) {
    let mut best: Option<(f64, Keyed)> = None;
    q.heaps.retain(|need, heap| {
        while let Some(Reverse(k)) = heap.peek() {
            if version[k.task as usize] == k.version {
                break;
            }
            heap.pop();
        }
        let Some(&Reverse(k)) = heap.peek() else {
            return false;
        };
        let ect = st.ect(need, k.cost, now);
        if best.is_none_or(|(b, bk)| ect.total_cmp(&b).then(k.cmp(&bk)).is_lt()) {
            best = Some((ect, k));
        }
        true
    });
    let (ect, k) = best.expect("a node with tasks left has a current heap entry");
    (k.task, ect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::model::{ComputeCluster, DataFile, StorageNode, Task};
    use rand::{Rng, SeedableRng};

    /// The direct reading of Section 5.3, kept as the test oracle: at each pick, the ECT
    /// of every remaining task of the node.
    fn order_by_ect_directly(
        workload: &Workload,
        platform: &StagingPlatform,
        node_of: &[u32],
    ) -> Vec<Vec<TaskId>> {
        let nodes: Vec<NodeInfo> = platform.nodes();
        let storage = platform.storage.len();
        let files = workload.files.len();
        let mut st = State::new(workload, platform, &nodes);
        let mut remaining: Vec<Vec<TaskId>> = vec![Vec::new(); nodes.len()];
        for (t, &i) in node_of.iter().enumerate() {
            remaining[i as usize].push(t as TaskId);
        }
        let mut order = vec![Vec::new(); nodes.len()];
        let mut free_at = vec![0.0f64; nodes.len()];
        let mut per_storage = vec![0.0; storage];
        while let Some(i) = (0..nodes.len())
            .filter(|&i| !remaining[i].is_empty())
            .min_by(|&a, &b| free_at[a].total_cmp(&free_at[b]).then(a.cmp(&b)))
        {
            let now = free_at[i];
            let (pos, ect, _) = remaining[i]
                .iter()
                .enumerate()
                .map(|(pos, &t)| {
                    let (need, cost) = st.key(i, t, &mut per_storage);
                    (pos, st.ect(&need, cost, now), cost)
                })
                .min_by(|a, b| {
                    a.1.total_cmp(&b.1)
                        .then(a.2.total_cmp(&b.2))
                        .then(remaining[i][a.0].cmp(&remaining[i][b.0]))
                })
                .unwrap();
            let t = remaining[i].swap_remove(pos);
            st.transfers(i, t, &mut per_storage);
            for (p, &x) in per_storage.iter().enumerate() {
                if x > 0.0 {
                    st.storage_wait[p] = st.storage_wait[p].max(now) + x;
                }
            }
            for &f in &workload.tasks[t as usize].files {
                st.present[i * files + f as usize] = true;
            }
            free_at[i] = ect;
            order[i].push(t);
        }
        order
    }

    #[test]
    fn the_heaps_give_the_order_of_the_direct_reading() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for case in 0..40 {
            let storage = rng.random_range(1..=4usize);
            let platform = StagingPlatform {
                clusters: (0..rng.random_range(1..=3))
                    .map(|c| ComputeCluster {
                        name: format!("c{c}"),
                        nodes: rng.random_range(1..=3),
                        compute_seconds_per_byte: 1e-9,
                        disk_bandwidth: rng.random_range(1..=4) as f64 * 1e8,
                        link_bandwidth: rng.random_range(1..=8) as f64 * 1e6,
                    })
                    .collect(),
                storage: (0..storage)
                    .map(|_| StorageNode {
                        io_bandwidth: rng.random_range(1..=4) as f64 * 1e6,
                    })
                    .collect(),
            };
            let nfiles = rng.random_range(1..=30u32);
            let files: Vec<DataFile> = (0..nfiles)
                .map(|_| DataFile {
                    size_bytes: rng.random_range(1..=16) * 250_000,
                    storage: rng.random_range(0..storage as u32),
                })
                .collect();
            let tasks: Vec<Task> = (0..rng.random_range(1..=60))
                .map(|_| {
                    let mut f: Vec<u32> = (0..rng.random_range(1..=5))
                        .map(|_| rng.random_range(0..nfiles))
                        .collect();
                    f.sort();
                    f.dedup();
                    Task { files: f }
                })
                .collect();
            let w = Workload { files, tasks };
            let n = platform.nodes().len() as u32;
            let node_of: Vec<u32> = (0..w.tasks.len()).map(|_| rng.random_range(0..n)).collect();
            assert_eq!(
                order_by_ect(&w, &platform, &node_of),
                order_by_ect_directly(&w, &platform, &node_of),
                "case {case}"
            );
        }
    }

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
