//! Live Het-HPS staging for data-intensive applications. When such an application has
//! waiting tasks and the agent set is new to it, the manager builds the staging model from
//! live data (each waiting task's declared inputs, sized by their declared `size` or, for
//! file-service files, their size on disk; each active agent as one compute node, faster
//! by its platform's measured relative speed; the file service as one storage node), runs
//! the pure planner with a seeded RNG and binds the node lists to the agents as the
//! queues' partitions. It runs before a lease only when a plan is due, never per pull.

use super::Manager;
use crate::queue::{Partitions, StagingRequest};
use crate::staging::model::{ComputeCluster, DataFile, Platform, StorageNode, Task, Workload};
use crate::staging::{policy_by_name, StagingError, StagingPlan};
use hetpilot_shared::files::{Source, TaskFile};
use std::collections::HashMap;

/// Seconds of computation per input byte on a platform of relative speed 1.
const COMPUTE_SECONDS_PER_BYTE: f64 = 1e-8;
/// A node's local disk bandwidth (bytes/s).
const DISK_BANDWIDTH: f64 = 500e6;
/// Each agent's link to the file service (bytes/s).
const LINK_BANDWIDTH: f64 = 100e6;
/// The file service's I/O bandwidth (bytes/s).
const SERVICE_BANDWIDTH: f64 = 1e9;

impl Manager {
    /// Plans every data-intensive application whose partitions are missing or stale.
    pub(super) fn plan_staging(&self) {
        let due = self.queues().staging_due();
        if due.is_empty() {
            return;
        }
        let speeds = self.live().speeds.clone();
        for req in due {
            let root = self.files_root().join(&req.owner);
            let size = |f: &TaskFile| match (&f.size, &f.source) {
                (Some(s), _) => *s,
                (None, Source::Service(name)) => std::fs::metadata(root.join(name))
                    .map(|m| m.len())
                    .unwrap_or(0),
                (None, _) => 0,
            };
            let (workload, platform) = staging_model(&req, size, &speeds);
            let partitions = match policy_by_name("het-hps")
                .expect("het-hps is a policy")
                .plan(&workload, &platform, req.app.0)
            {
                Ok(plan) => bind(&req, plan),
                Err(e) => {
                    log_failure(&req, &e);
                    Partitions::new(req.generation, Vec::new(), task_indices(&req))
                }
            };
            if self.queues().set_partitions(req.app, partitions) {
                tracing::info!(app = %req.app, tasks = req.tasks.len(), agents = req.agents.len(),
                    "het-hps staging plan bound to agents");
            }
        }
    }
}

fn log_failure(req: &StagingRequest, e: &StagingError) {
    tracing::warn!(app = %req.app, error = %e,
        "het-hps staging plan failed; this application's tasks go first come, first served");
}

fn task_indices(req: &StagingRequest) -> Vec<u64> {
    req.tasks.iter().map(|(t, _)| *t).collect()
}

/// The staging model of a request: files fetched by the agents (shared-filesystem files
/// are read in place and left out), one single-node cluster per agent, one storage node.
fn staging_model(
    req: &StagingRequest,
    size: impl Fn(&TaskFile) -> u64,
    speeds: &HashMap<String, f64>,
) -> (Workload, Platform) {
    let mut ids: HashMap<&Source, u32> = HashMap::new();
    let mut files = Vec::new();
    let tasks = req
        .tasks
        .iter()
        .map(|(_, inputs)| {
            let mut read: Vec<u32> = inputs
                .iter()
                .filter(|f| !matches!(f.source, Source::Shared(_)))
                .map(|f| {
                    *ids.entry(&f.source).or_insert_with(|| {
                        files.push(DataFile {
                            size_bytes: size(f),
                            storage: 0,
                        });
                        files.len() as u32 - 1
                    })
                })
                .collect();
            read.sort_unstable();
            read.dedup();
            Task { files: read }
        })
        .collect();
    let clusters = req
        .agents
        .iter()
        .map(|(id, platform)| {
            let speed = speeds
                .get(platform)
                .copied()
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(1.0);
            ComputeCluster {
                name: format!("agent {id}"),
                nodes: 1,
                compute_seconds_per_byte: COMPUTE_SECONDS_PER_BYTE / speed,
                disk_bandwidth: DISK_BANDWIDTH,
                link_bandwidth: LINK_BANDWIDTH,
            }
        })
        .collect();
    let platform = Platform {
        clusters,
        storage: vec![StorageNode {
            io_bandwidth: SERVICE_BANDWIDTH,
        }],
    };
    (Workload { files, tasks }, platform)
}

/// Node i's list goes to the request's agent i; a shared queue becomes the pool.
fn bind(req: &StagingRequest, plan: StagingPlan) -> Partitions {
    let index = |t: &u32| req.tasks[*t as usize].0;
    match plan {
        StagingPlan::PerNode(lists) => Partitions::new(
            req.generation,
            req.agents
                .iter()
                .zip(lists)
                .map(|((agent, _), list)| (*agent, list.iter().map(index).collect()))
                .collect(),
            Vec::new(),
        ),
        StagingPlan::SharedQueue(queue) => Partitions::new(
            req.generation,
            Vec::new(),
            queue.iter().map(index).collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_shared::{AgentId, AppId};

    fn file(name: &str, size: u64) -> TaskFile {
        TaskFile {
            source: Source::Service(name.into()),
            name: name.into(),
            size: Some(size),
            sha256: None,
        }
    }

    /// 4 groups of 4 tasks, interleaved in the queue; each group reads 3 files of 1 MB.
    fn grouped() -> StagingRequest {
        let tasks = (0..16u64)
            .map(|t| {
                let g = t % 4;
                let inputs = (0..3)
                    .map(|k| file(&format!("g{g}/f{k}"), 1 << 20))
                    .collect();
                (t, inputs)
            })
            .collect();
        StagingRequest {
            app: AppId(7),
            owner: "alice".into(),
            generation: 3,
            agents: vec![(AgentId(1), "local".into()), (AgentId(2), "local".into())],
            tasks,
        }
    }

    #[test]
    fn model_shares_files_between_tasks_and_has_one_node_per_agent() {
        let req = grouped();
        let speeds = HashMap::from([("local".to_string(), 2.0)]);
        let (w, p) = staging_model(&req, |f| f.size.unwrap(), &speeds);
        assert_eq!(w.files.len(), 12);
        assert_eq!(w.tasks.len(), 16);
        assert_eq!(w.tasks[0].files, w.tasks[4].files);
        assert_ne!(w.tasks[0].files, w.tasks[1].files);
        assert_eq!(p.node_count(), 2);
        assert_eq!(
            p.clusters[0].compute_seconds_per_byte,
            COMPUTE_SECONDS_PER_BYTE / 2.0
        );
    }

    #[test]
    fn het_hps_binds_each_group_to_one_agent() {
        let req = grouped();
        let (w, p) = staging_model(&req, |f| f.size.unwrap(), &HashMap::new());
        let plan = policy_by_name("het-hps").unwrap().plan(&w, &p, 7).unwrap();
        let mut parts = bind(&req, plan);
        assert_eq!(parts.generation, 3);
        let mut groups: [Vec<AgentId>; 4] = Default::default();
        for agent in [AgentId(1), AgentId(2)] {
            assert!(parts.listed(agent) > 0, "agent {agent} got no partition");
            while parts.listed(agent) > 0 {
                let t = parts.next(agent, |_| true).unwrap();
                groups[(t % 4) as usize].push(agent);
            }
        }
        for (g, agents) in groups.iter().enumerate() {
            assert_eq!(agents.len(), 4);
            assert!(
                agents.iter().all(|a| *a == agents[0]),
                "group {g} split: {agents:?}"
            );
        }
    }
}
