//! Simulation of a staging plan (paper Section 6.3, which used SimGrid): every node runs
//! its tasks one after another; for each task it fetches the input files it does not hold
//! yet, one at a time, then reads all inputs from local disk and computes. Storage disks,
//! each cluster's link to the storage and each node's disk are time-shared resources:
//! concurrent transfers get max-min fair shares of every resource they cross (storage
//! disk IBW_p, cluster link, the node's disk LBW_i). A file stays cached on a node after
//! its first transfer.

use crate::staging::model::{StagingPlatform, TaskId, Workload};
use crate::staging::policy::StagingPlan;

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
    pub transfers: usize,
    /// Completion time of each node's last task.
    pub node_finish: Vec<f64>,
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
    let nodes = platform.nodes();
    let k = nodes.len();
    let storage = platform.storage.len();
    let clusters = platform.clusters.len();
    // Resources: storage disks, then cluster links, then node disks.
    let mut capacity: Vec<f64> = platform.storage.iter().map(|s| s.io_bandwidth).collect();
    capacity.extend(platform.clusters.iter().map(|c| c.link_bandwidth));
    capacity.extend(nodes.iter().map(|n| n.disk_bandwidth));
    let link_of = |i: usize| storage + nodes[i].cluster as usize;
    let disk_of = |i: usize| storage + clusters + i;

    let (mut queues, mut shared): (
        Vec<std::collections::VecDeque<TaskId>>,
        std::collections::VecDeque<TaskId>,
    ) = match plan {
        StagingPlan::PerNode(lists) => (
            (0..k)
                .map(|i| lists.get(i).cloned().unwrap_or_default().into())
                .collect(),
            Default::default(),
        ),
        StagingPlan::SharedQueue(q) => (vec![Default::default(); k], q.iter().copied().collect()),
    };
    let files = workload.files.len();
    let mut cached = vec![false; k * files];
    let mut phase = vec![Phase::Idle; k];
    let mut flows: Vec<Option<Flow>> = vec![None; k];
    let mut node_finish = vec![0.0f64; k];
    let (mut bytes_transferred, mut transfers, mut completed) = (0u64, 0usize, 0usize);
    let mut now = 0.0f64;

    // Advances node i from its current phase to the next one that takes time.
    let advance = |i: usize,
                   now: f64,
                   phase: &mut [Phase],
                   flows: &mut [Option<Flow>],
                   cached: &mut [bool],
                   queues: &mut [std::collections::VecDeque<TaskId>],
                   shared: &mut std::collections::VecDeque<TaskId>,
                   node_finish: &mut [f64],
                   bytes_transferred: &mut u64,
                   transfers: &mut usize,
                   completed: &mut usize| {
        loop {
            match phase[i] {
                Phase::Idle => {
                    let next = queues[i].pop_front().or_else(|| shared.pop_front());
                    match next {
                        Some(task) => phase[i] = Phase::Fetching { task, next: 0 },
                        None => return,
                    }
                }
                Phase::Fetching { task, next } => {
                    let list = &workload.tasks[task as usize].files;
                    if next >= list.len() {
                        let bytes = workload.task_bytes(task) as f64;
                        phase[i] = Phase::Reading { task };
                        flows[i] = Some(Flow {
                            remaining: bytes,
                            resources: vec![disk_of(i)],
                            rate: 0.0,
                        });
                        return;
                    }
                    let f = list[next] as usize;
                    phase[i] = Phase::Fetching {
                        task,
                        next: next + 1,
                    };
                    if cached[i * files + f] {
                        continue;
                    }
                    cached[i * files + f] = true;
                    let file = &workload.files[f];
                    *bytes_transferred += file.size_bytes;
                    *transfers += 1;
                    flows[i] = Some(Flow {
                        remaining: file.size_bytes as f64,
                        resources: vec![file.storage as usize, link_of(i), disk_of(i)],
                        rate: 0.0,
                    });
                    return;
                }
                Phase::Reading { task } => {
                    let bytes = workload.task_bytes(task) as f64;
                    let until = now + bytes * nodes[i].compute_seconds_per_byte;
                    phase[i] = Phase::Computing { until };
                    return;
                }
                Phase::Computing { .. } => {
                    *completed += 1;
                    node_finish[i] = now;
                    phase[i] = Phase::Idle;
                }
            }
        }
    };

    for i in 0..k {
        advance(
            i,
            now,
            &mut phase,
            &mut flows,
            &mut cached,
            &mut queues,
            &mut shared,
            &mut node_finish,
            &mut bytes_transferred,
            &mut transfers,
            &mut completed,
        );
    }
    loop {
        share_bandwidth(&mut flows, &capacity);
        let next_flow = flows
            .iter()
            .flatten()
            .map(|f| f.remaining / f.rate)
            .fold(f64::INFINITY, f64::min);
        let next_compute = phase
            .iter()
            .filter_map(|p| match p {
                Phase::Computing { until } => Some(until - now),
                _ => None,
            })
            .fold(f64::INFINITY, f64::min);
        let dt = next_flow.min(next_compute);
        if !dt.is_finite() {
            break;
        }
        now += dt.max(0.0);
        let mut done = Vec::new();
        for (i, slot) in flows.iter_mut().enumerate() {
            if let Some(f) = slot {
                f.remaining -= f.rate * dt;
                if f.remaining <= 1e-6 * f.rate.max(1.0) {
                    *slot = None;
                    done.push(i);
                }
            }
        }
        for (i, p) in phase.iter().enumerate() {
            if let Phase::Computing { until } = p {
                if *until <= now + 1e-12 {
                    done.push(i);
                }
            }
        }
        done.sort_unstable();
        done.dedup();
        for i in done {
            advance(
                i,
                now,
                &mut phase,
                &mut flows,
                &mut cached,
                &mut queues,
                &mut shared,
                &mut node_finish,
                &mut bytes_transferred,
                &mut transfers,
                &mut completed,
            );
        }
    }
    let makespan = node_finish.iter().copied().fold(0.0, f64::max);
    StagingSimResult {
        makespan,
        throughput: if makespan > 0.0 {
            workload.tasks.len() as f64 / makespan
        } else {
            0.0
        },
        bytes_transferred,
        transfers,
        node_finish,
        completed,
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
    use crate::staging::model::{ComputeCluster, DataFile, StorageNode, Task};

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
