//! Live Het-HPS staging for data-intensive applications. When such an application has
//! waiting tasks and the agent set is new to it, the manager builds the staging model from
//! live data (`staging_model`) and runs the pure planner with a seeded RNG, then binds the
//! node lists to the agents as the queues' partitions. It runs before a lease only when a
//! plan is due, never per pull, and off the async runtime (the blocking pool), with no
//! lock held while it plans.
//!
//! A plan is made with what is measured when it is made: an application's first plan uses
//! the profiles' numbers, later plans (a new agent set, a new application) the measured ones.

use super::staging_model::{request_files, staging_platform, Measures};
use super::Manager;
use crate::queue::{Partitions, StagingDue, StagingRequest};
use crate::staging::{policy_by_name, StagingError, StagingPlan};
use hetpilot_shared::files::{Source, TaskFile};
use hetpilot_shared::AppId;
use std::collections::HashSet;

/// The staging plans being made, so concurrent pulls plan each application once and wait
/// for that plan instead of leasing before it.
#[derive(Default)]
pub(super) struct StagingInFlight {
    planning: std::sync::Mutex<HashSet<(AppId, u64)>>,
    done: tokio::sync::Notify,
}

impl Manager {
    /// Plans every data-intensive application whose partitions are missing or stale. The
    /// planning (file sizes, the Het-HPS partitioning) runs on the blocking pool, so the
    /// async runtime keeps serving heartbeats and other pulls; no lock is held meanwhile.
    pub(super) async fn plan_staging(&self) {
        loop {
            let due = self.queues().staging_due();
            if due.is_empty() {
                return;
            }
            let flight = &self.staging_in_flight;
            let done = flight.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            let mine: Vec<StagingDue> = {
                let mut planning = flight.planning.lock().unwrap_or_else(|p| p.into_inner());
                due.into_iter()
                    .filter(|r| planning.insert((r.app, r.generation)))
                    .collect()
            };
            if mine.is_empty() {
                // Another pull is planning them: wait for its plan.
                done.await;
                continue;
            }
            let keys: Vec<(AppId, u64)> = mine.iter().map(|r| (r.app, r.generation)).collect();
            for (app, partitions) in self.plan_off_runtime(mine).await {
                if self.queues().set_partitions(app, partitions) {
                    tracing::info!(%app, "het-hps staging plan bound to agents");
                }
            }
            {
                let mut planning = flight.planning.lock().unwrap_or_else(|p| p.into_inner());
                for k in &keys {
                    planning.remove(k);
                }
            }
            flight.done.notify_waiters();
        }
    }

    /// Each request's partitions: Het-HPS's plan, or first come, first served when planning
    /// fails (or its thread died).
    async fn plan_off_runtime(&self, due: Vec<StagingDue>) -> Vec<(AppId, Partitions)> {
        // Without a plan, no partitions: the application's tasks go first come, first served.
        let fallback: Vec<(AppId, Partitions)> = due
            .iter()
            .map(|d| (d.app, Partitions::new(d.generation, Vec::new(), Vec::new())))
            .collect();
        let root = self.files_root();
        // Rendering each task's files and reading sizes from the disk: blocking.
        let sized = tokio::task::spawn_blocking(move || {
            due.into_iter()
                .map(StagingDue::render)
                .map(|req| {
                    let root = root.join(&req.owner);
                    let size = |f: &TaskFile| match (&f.size, &f.source) {
                        (Some(s), _) => *s,
                        (None, Source::Service(name)) => std::fs::metadata(root.join(name))
                            .map(|m| m.len())
                            .unwrap_or(0),
                        (None, _) => 0,
                    };
                    let files = request_files(&req, size);
                    (req, files)
                })
                .collect::<Vec<_>>()
        })
        .await;
        let Ok(sized) = sized else {
            return fallback;
        };
        let models: Vec<_> = {
            let live = self.live();
            let measures = Measures::of(&live);
            sized
                .into_iter()
                .map(|(req, files)| {
                    let platform = staging_platform(&req, &files, &measures);
                    (req, files, platform)
                })
                .collect()
        };
        let planned = tokio::task::spawn_blocking(move || {
            models
                .into_iter()
                .map(|(req, files, platform)| {
                    let partitions = match policy_by_name("het-hps")
                        .expect("het-hps is a policy")
                        .plan(&files.workload, &platform, req.app.0)
                    {
                        Ok(plan) => bind(&req, plan),
                        Err(e) => {
                            log_failure(&req, &e);
                            Partitions::new(req.generation, Vec::new(), task_indices(&req))
                        }
                    };
                    (req.app, partitions)
                })
                .collect()
        })
        .await;
        planned.unwrap_or_else(|e| {
            tracing::error!(error = %e, "staging planning aborted; first come, first served");
            fallback
        })
    }
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::staging_model::tests::{grouped, State};
    use crate::staging::model::{StagingPlatform, Workload};
    use hetpilot_shared::files::Transfer;
    use hetpilot_shared::AgentId;
    use std::collections::HashMap;

    const MIB: f64 = 1024.0 * 1024.0;

    /// Input bytes of the tasks the plan binds to each agent (before any stealing).
    fn bytes_per_agent(
        req: &StagingRequest,
        w: &Workload,
        p: &StagingPlatform,
    ) -> HashMap<AgentId, u64> {
        let plan = policy_by_name("het-hps").unwrap().plan(w, p, 7).unwrap();
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
    fn het_hps_binds_each_group_to_one_agent() {
        let req = grouped();
        let (w, p) = State::default().platform(&req);
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
