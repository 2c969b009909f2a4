//! The pure half of live Het-HPS staging: a request's model (files sized by the shell)
//! planned with the seeded Het-HPS policy, and the plan bound to the request's agents as
//! the queues' partitions. The live manager calls it on the blocking pool, the simulator
//! inline.

use super::staging_model::{staging_platform, Measures, RequestFiles};
use super::Control;
use crate::queue::{Partitions, StagingRequest};
use crate::staging::{StagingAlgorithm, StagingError, StagingPlan};
use hetpilot_protocol::AppId;

/// A request ready to plan: its files and the platform its agents form.
pub struct StagingJob {
    req: StagingRequest,
    files: RequestFiles,
    platform: crate::staging::model::StagingPlatform,
}

impl Control {
    /// The staging models of sized requests, from what is measured now.
    pub fn staging_jobs(&self, sized: Vec<(StagingRequest, RequestFiles)>) -> Vec<StagingJob> {
        let measures = Measures::of(&self.policy);
        sized
            .into_iter()
            .map(|(req, files)| {
                let platform = staging_platform(&req, &files, &measures);
                StagingJob {
                    req,
                    files,
                    platform,
                }
            })
            .collect()
    }
}

/// A plan made: the partitions to install and the staging it predicts.
#[derive(Debug)]
pub struct PlannedStaging {
    /// The application.
    pub app: AppId,
    /// Its tasks bound to agents (or one pool).
    pub partitions: Partitions,
    /// Input bytes the plan has each platform's agents stage: per agent, the distinct
    /// files of the tasks bound to it, each counted once (a node cache fetches a file
    /// once), not knowing what the caches hold already. Empty without a per-node plan.
    pub predicted_bytes: Vec<(String, u64)>,
}

impl StagingJob {
    /// Het-HPS's plan bound to the request's agents; first come, first served when the
    /// planner fails.
    pub fn plan(self) -> PlannedStaging {
        let req = self.req;
        let (partitions, predicted_bytes) = match StagingAlgorithm::HetHps.build().plan(
            &self.files.workload,
            &self.platform,
            req.app.0,
        ) {
            Ok(plan) => {
                let predicted = predicted_bytes(&req, &self.files.workload, &plan);
                (bind(&req, plan), predicted)
            }
            Err(e) => {
                log_failure(&req, &e);
                let pool = Partitions::new(req.generation, Vec::new(), task_indices(&req));
                (pool, Vec::new())
            }
        };
        PlannedStaging {
            app: req.app,
            partitions,
            predicted_bytes,
        }
    }
}

/// What a per-node plan has each platform stage (see [`PlannedStaging::predicted_bytes`]).
fn predicted_bytes(
    req: &StagingRequest,
    workload: &crate::staging::model::Workload,
    plan: &StagingPlan,
) -> Vec<(String, u64)> {
    let StagingPlan::PerNode(lists) = plan else {
        return Vec::new();
    };
    let mut per_platform: std::collections::BTreeMap<String, u64> = Default::default();
    for ((_, platform), list) in req.agents.iter().zip(lists) {
        let files: std::collections::BTreeSet<u32> = list
            .iter()
            .filter_map(|&t| workload.tasks.get(t as usize))
            .flat_map(|t| t.files.iter().copied())
            .collect();
        let bytes = files
            .iter()
            .filter_map(|&f| workload.files.get(f as usize))
            .fold(0u64, |sum, f| sum.saturating_add(f.size_bytes));
        let total = per_platform.entry(platform.clone()).or_default();
        *total = total.saturating_add(bytes);
    }
    per_platform.into_iter().collect()
}

fn log_failure(req: &StagingRequest, e: &StagingError) {
    tracing::warn!(app = %req.app, error = %e,
        "het-hps staging plan failed; this application's tasks go first come, first served");
}

fn task_indices(req: &StagingRequest) -> Vec<u64> {
    req.tasks.iter().map(|(t, _)| *t).collect()
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
        // The live pool has no online MCT dispatcher: first come, first served.
        StagingPlan::Online { .. } => {
            Partitions::new(req.generation, Vec::new(), task_indices(req))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::staging_model::tests::{grouped, State};
    use crate::staging::model::{StagingPlatform, Workload};
    use hetpilot_protocol::files::Transfer;
    use hetpilot_protocol::AgentId;
    use std::collections::HashMap;

    const MIB: f64 = 1024.0 * 1024.0;

    /// Input bytes of the tasks the plan binds to each agent (before any stealing).
    fn bytes_per_agent(
        req: &StagingRequest,
        w: &Workload,
        p: &StagingPlatform,
    ) -> HashMap<AgentId, u64> {
        let plan = StagingAlgorithm::HetHps.build().plan(w, p, 7).unwrap();
        let mut parts = bind(req, plan);
        let mut bytes = HashMap::new();
        for (agent, _) in &req.agents {
            while parts.listed(*agent) > 0 {
                let t = parts.next(*agent, |_| true).unwrap();
                let task = &w.tasks[t as usize];
                *bytes.entry(*agent).or_insert(0) += task
                    .files
                    .iter()
                    .map(|&f| w.files[f as usize].size_bytes)
                    .sum::<u64>();
            }
        }
        bytes
    }

    #[test]
    fn a_plan_predicts_each_agents_distinct_files_once() {
        // Four groups of tasks sharing three 1 MiB files each, each group on one agent:
        // every file is fetched once, by its group's agent.
        let req = grouped();
        let (w, p) = State::default().platform(&req);
        let plan = StagingAlgorithm::HetHps.build().plan(&w, &p, 7).unwrap();
        let predicted = predicted_bytes(&req, &w, &plan);
        let group = 3 * (1u64 << 20);
        assert_eq!(predicted.iter().map(|(_, b)| b).sum::<u64>(), 4 * group);
        let platforms: Vec<&str> = predicted.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(platforms, ["fast", "slow"]);
        assert!(
            predicted.iter().all(|(_, b)| *b > 0 && b % group == 0),
            "{predicted:?}"
        );
        // A shared queue predicts nothing.
        assert!(predicted_bytes(&req, &w, &StagingPlan::SharedQueue(vec![0])).is_empty());
    }

    #[test]
    fn het_hps_binds_each_group_to_one_agent() {
        let req = grouped();
        let (w, p) = State::default().platform(&req);
        let plan = StagingAlgorithm::HetHps.build().plan(&w, &p, 7).unwrap();
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

    /// The profile says both links are equal; the slow platform's measured transfers say
    /// its link is 40× slower: the plan follows the measurement.
    #[test]
    fn measured_transfers_replace_the_profile_link_and_move_work() {
        let req = grouped();
        let mut state = State::default();
        let (w, p) = state.platform(&req);
        let even = bytes_per_agent(&req, &w, &p);
        assert_eq!(even[&AgentId(1)], even[&AgentId(2)], "{even:?}");

        for _ in 0..4 {
            state.bandwidths.add(
                "slow",
                &Transfer {
                    endpoint: "manager".into(),
                    bytes: 5 << 20,
                    ms: 2000.0,
                    mib_per_s: 2.5,
                },
            );
        }
        let (w, p) = state.platform(&req);
        assert_eq!(p.clusters[1].link_bandwidth, 2.5 * MIB);
        assert_eq!(p.clusters[0].link_bandwidth, 100.0 * MIB);
        let skewed = bytes_per_agent(&req, &w, &p);
        assert!(
            skewed.get(&AgentId(2)).copied().unwrap_or(0) < skewed[&AgentId(1)],
            "{skewed:?}"
        );
    }
}
