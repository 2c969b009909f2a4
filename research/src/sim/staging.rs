//! Simulation of a staging plan (paper Section 6.3, which used SimGrid): every node runs
//! its tasks one after another; for each task it fetches the input files it does not hold
//! yet, one at a time, then reads all inputs from local disk and computes. Storage disks,
//! each cluster's link to the storage and each node's disk are time-shared resources:
//! concurrent transfers get max-min fair shares of every resource they cross (storage
//! disk IBW_p, cluster link, the node's disk LBW_i). A file stays cached on a node after
//! its first transfer. An online plan (the paper's MinMin/MaxMin/Sufferage) is made
//! during the run: whenever nodes fall idle, its dispatcher picks their next tasks.

use std::collections::VecDeque;

use hetpilot_core::staging::OnlineMct;
use hetpilot_core::staging::StagingPlan;
use hetpilot_core::staging::{NodeInfo, StagingPlatform, TaskId, Workload};

/// What a simulated batch did.
#[derive(Debug, Clone, PartialEq)]
pub struct StagingSimResult {
    /// Batch execution time (makespan), seconds.
    pub makespan: f64,
    /// Tasks per second over the batch.
    pub throughput: f64,
    /// Bytes moved from storage to compute nodes.
    pub bytes_transferred: u64,
    /// Number of file transfers.
    pub(crate) transfers: usize,
    /// Completion time of each node's last task.
    pub(crate) node_finish: Vec<f64>,
    /// Tasks run to completion (all of the plan's tasks).
    pub completed: usize,
}

/// A node's current activity.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Idle,
    /// Fetching file `files[next - 1]` of the task.
    Fetching {
        task: TaskId,
        next: usize,
    },
    /// Reading the task's inputs from local disk.
    Reading {
        task: TaskId,
    },
    /// Computing until the given time.
    Computing {
        until: f64,
    },
}

/// A transfer or local read in progress over shared resources.
#[derive(Debug, Clone)]
struct Flow {
    remaining: f64,
    resources: Vec<usize>,
    rate: f64,
}

/// Simulates `plan`; the plan must contain every task once.
pub fn simulate_staging(
    workload: &Workload,
    platform: &StagingPlatform,
    plan: &StagingPlan,
) -> StagingSimResult {
    let mut batch = Batch::new(workload, platform, plan);
    let mut now = 0.0f64;
    for i in 0..batch.nodes.len() {
        batch.advance(i, now);
    }
    batch.dispatch_online(now);
    loop {
        share_bandwidth(&mut batch.flows, &batch.capacity);
        let dt = batch.time_to_next_event(now);
        if !dt.is_finite() {
            break;
        }
        now += dt.max(0.0);
        for i in batch.progress(dt, now) {
            batch.advance(i, now);
        }
        batch.dispatch_online(now);
    }
    batch.result()
}

/// The simulated batch: every node's queue, phase and file cache, the flows in progress
/// over the shared resources, and the counters of the result.
struct Batch<'a> {
    workload: &'a Workload,
    nodes: Vec<NodeInfo>,
    /// Numbers of storage nodes and of clusters: resource indices are the storage disks,
    /// then the cluster links, then the node disks.
    storage: usize,
    clusters: usize,
    /// Capacity of every resource, bytes/s.
    capacity: Vec<f64>,
    /// Per node, the tasks the plan gave it.
    queues: Vec<VecDeque<TaskId>>,
    /// The plan's shared queue (SJF), feeding idle nodes.
    shared: VecDeque<TaskId>,
    /// The online dispatcher of an online plan.
    online: Option<OnlineMct>,
    /// `cached[i * files + f]`: node i holds file f.
    cached: Vec<bool>,
    phase: Vec<Phase>,
    flows: Vec<Option<Flow>>,
    node_finish: Vec<f64>,
    bytes_transferred: u64,
    transfers: usize,
    completed: usize,
}

impl<'a> Batch<'a> {
    fn new(workload: &'a Workload, platform: &StagingPlatform, plan: &StagingPlan) -> Self {
        let nodes = platform.nodes();
        let k = nodes.len();
        // Resources: storage disks, then cluster links, then node disks.
        let mut capacity: Vec<f64> = platform.storage.iter().map(|s| s.io_bandwidth).collect();
        capacity.extend(platform.clusters.iter().map(|c| c.link_bandwidth));
        capacity.extend(nodes.iter().map(|n| n.disk_bandwidth));
        let online = match plan {
            StagingPlan::Online { rule, idle_only } => {
                Some(OnlineMct::new(*rule, *idle_only, workload, platform))
            }
            _ => None,
        };
        let (queues, shared): (Vec<VecDeque<TaskId>>, VecDeque<TaskId>) = match plan {
            StagingPlan::PerNode(lists) => (
                (0..k)
                    .map(|i| lists.get(i).cloned().unwrap_or_default().into())
                    .collect(),
                Default::default(),
            ),
            StagingPlan::SharedQueue(q) => {
                (vec![Default::default(); k], q.iter().copied().collect())
            }
            StagingPlan::Online { .. } => (vec![Default::default(); k], Default::default()),
        };
        Batch {
            workload,
            storage: platform.storage.len(),
            clusters: platform.clusters.len(),
            capacity,
            queues,
            shared,
            online,
            cached: vec![false; k * workload.files.len()],
            phase: vec![Phase::Idle; k],
            flows: vec![None; k],
            node_finish: vec![0.0f64; k],
            bytes_transferred: 0,
            transfers: 0,
            completed: 0,
            nodes,
        }
    }

    /// Resource index of node i's cluster link.
    fn link_of(&self, i: usize) -> usize {
        self.storage + self.nodes[i].cluster as usize
    }

    /// Resource index of node i's disk.
    fn disk_of(&self, i: usize) -> usize {
        self.storage + self.clusters + i
    }

    /// An online plan's scheduling event: the dispatcher picks tasks for the idle nodes,
    /// which start them at once.
    fn dispatch_online(&mut self, now: f64) {
        let Some(online) = self.online.as_mut() else {
            return;
        };
        if online.pending() == 0 {
            return;
        }
        let idle: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.phase[i] == Phase::Idle && self.queues[i].is_empty())
            .collect();
        if idle.is_empty() {
            return;
        }
        for (task, i) in online.dispatch(self.workload, now, &idle) {
            self.queues[i].push_back(task);
            self.advance(i, now);
        }
    }

    /// Advances node i from its current phase to the next one that takes time.
    fn advance(&mut self, i: usize, now: f64) {
        let workload = self.workload;
        let files = workload.files.len();
        loop {
            match self.phase[i] {
                Phase::Idle => {
                    let next = self.queues[i]
                        .pop_front()
                        .or_else(|| self.shared.pop_front());
                    match next {
                        Some(task) => self.phase[i] = Phase::Fetching { task, next: 0 },
                        None => return,
                    }
                }
                Phase::Fetching { task, next } => {
                    let list = &workload.tasks[task as usize].files;
                    if next >= list.len() {
                        let bytes = workload.task_bytes(task) as f64;
                        self.phase[i] = Phase::Reading { task };
                        self.flows[i] = Some(Flow {
                            remaining: bytes,
                            resources: vec![self.disk_of(i)],
                            rate: 0.0,
                        });
                        return;
                    }
                    let f = list[next] as usize;
                    self.phase[i] = Phase::Fetching {
                        task,
                        next: next + 1,
                    };
                    if self.cached[i * files + f] {
                        continue;
                    }
                    self.cached[i * files + f] = true;
                    let file = &workload.files[f];
                    self.bytes_transferred += file.size_bytes;
                    self.transfers += 1;
                    self.flows[i] = Some(Flow {
                        remaining: file.size_bytes as f64,
                        resources: vec![file.storage as usize, self.link_of(i), self.disk_of(i)],
                        rate: 0.0,
                    });
                    return;
                }
                Phase::Reading { task } => {
                    let bytes = workload.task_bytes(task) as f64;
                    let until = now + bytes * self.nodes[i].compute_seconds_per_byte;
                    self.phase[i] = Phase::Computing { until };
                    return;
                }
                Phase::Computing { .. } => {
                    self.completed += 1;
                    self.node_finish[i] = now;
                    self.phase[i] = Phase::Idle;
                }
            }
        }
    }

    /// Time from `now` until the next flow or computation ends (infinite when nothing is
    /// in progress: the batch is over).
    fn time_to_next_event(&self, now: f64) -> f64 {
        let next_flow = self
            .flows
            .iter()
            .flatten()
            .map(|f| f.remaining / f.rate)
            .fold(f64::INFINITY, f64::min);
        let next_compute = self
            .phase
            .iter()
            .filter_map(|p| match p {
                Phase::Computing { until } => Some(until - now),
                _ => None,
            })
            .fold(f64::INFINITY, f64::min);
        next_flow.min(next_compute)
    }

    /// Moves every flow on by `dt` (the clock is now `now`); returns the nodes whose flow
    /// or computation has ended, ascending.
    fn progress(&mut self, dt: f64, now: f64) -> Vec<usize> {
        let mut done = Vec::new();
        for (i, slot) in self.flows.iter_mut().enumerate() {
            if let Some(f) = slot {
                f.remaining -= f.rate * dt;
                if f.remaining <= 1e-6 * f.rate.max(1.0) {
                    *slot = None;
                    done.push(i);
                }
            }
        }
        for (i, p) in self.phase.iter().enumerate() {
            if let Phase::Computing { until } = p {
                if *until <= now + 1e-12 {
                    done.push(i);
                }
            }
        }
        done.sort_unstable();
        done.dedup();
        done
    }

    fn result(self) -> StagingSimResult {
        let makespan = self.node_finish.iter().copied().fold(0.0, f64::max);
        StagingSimResult {
            makespan,
            throughput: if makespan > 0.0 {
                self.workload.tasks.len() as f64 / makespan
            } else {
                0.0
            },
            bytes_transferred: self.bytes_transferred,
            transfers: self.transfers,
            node_finish: self.node_finish,
            completed: self.completed,
        }
    }
}

/// Max-min fair rates by progressive filling: the most contended resource fixes the rate
/// of all its unfixed flows, its capacity is consumed, and so on.
fn share_bandwidth(flows: &mut [Option<Flow>], capacity: &[f64]) {
    let mut left = capacity.to_vec();
    let mut active: Vec<usize> = flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.as_ref().map(|_| i))
        .collect();
    let mut users = vec![0usize; capacity.len()];
    while !active.is_empty() {
        users.iter_mut().for_each(|u| *u = 0);
        for &i in &active {
            for &r in &flows[i].as_ref().expect("active").resources {
                users[r] += 1;
            }
        }
        let (bottleneck, share) = users
            .iter()
            .enumerate()
            .filter(|(_, &u)| u > 0)
            // Clamped so rounding can never stall a flow (rates stay positive).
            .map(|(r, &u)| (r, (left[r] / u as f64).max(1e-9)))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .expect("active flows use resources");
        let mut still = Vec::with_capacity(active.len());
        for &i in &active {
            let f = flows[i].as_mut().expect("active");
            if f.resources.contains(&bottleneck) {
                f.rate = share;
                for &r in &f.resources {
                    left[r] = (left[r] - share).max(0.0);
                }
            } else {
                still.push(i);
            }
        }
        active = still;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_core::staging::{ComputeCluster, DataFile, StorageNode, Task};

    fn platform(nodes: u32) -> StagingPlatform {
        StagingPlatform {
            clusters: vec![ComputeCluster {
                name: "c".into(),
                nodes,
                compute_seconds_per_byte: 1e-3,
                disk_bandwidth: 1000.0,
                link_bandwidth: 100.0,
            }],
            storage: vec![StorageNode {
                io_bandwidth: 1000.0,
            }],
        }
    }

    #[test]
    fn shared_link_halves_bandwidth_and_cache_avoids_refetch() {
        let w = Workload {
            files: vec![
                DataFile {
                    size_bytes: 100,
                    storage: 0,
                },
                DataFile {
                    size_bytes: 100,
                    storage: 0,
                },
            ],
            tasks: vec![
                Task { files: vec![0] },
                Task { files: vec![1] },
                Task { files: vec![0] },
            ],
        };
        // Two nodes fetch 100 B each over a 100 B/s shared link: 2 s each, then read 0.1 s
        // and compute 0.1 s. Node 0 then runs task 2 from its cache: 0.1 + 0.1 s.
        let plan = StagingPlan::PerNode(vec![vec![0, 2], vec![1]]);
        let r = simulate_staging(&w, &platform(2), &plan);
        assert_eq!(r.transfers, 2);
        assert_eq!(r.completed, 3);
        assert_eq!(r.bytes_transferred, 200);
        assert!((r.node_finish[1] - 2.2).abs() < 1e-6, "{:?}", r.node_finish);
        assert!((r.makespan - 2.4).abs() < 1e-6, "{}", r.makespan);
    }

    #[test]
    fn shared_queue_feeds_idle_nodes() {
        let w = Workload {
            files: vec![DataFile {
                size_bytes: 100,
                storage: 0,
            }],
            tasks: vec![Task { files: vec![0] }; 4],
        };
        let r = simulate_staging(
            &w,
            &platform(2),
            &StagingPlan::SharedQueue(vec![0, 1, 2, 3]),
        );
        // Both nodes fetch the file once each.
        assert_eq!(r.transfers, 2);
        assert!(r.throughput > 0.0);
    }
}
