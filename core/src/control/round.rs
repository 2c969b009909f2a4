//! A scheduling round in three steps, so that its CPU work can run with no lock held:
//! [`Control::begin_round`](super::Control::begin_round) copies what the round reads (the
//! applications with waiting tasks, the active agents, the profile, user weights) and
//! takes the planners; [`RoundJob::run`] computes the lease plan, the schedule view and
//! the provisioning demand; [`Control::finish_round`](super::Control::finish_round) puts
//! the planners back and applies the decisions. The live manager runs the middle step on
//! the blocking pool, the simulator inline: the same code either way.

use super::profiling::RunStats;
use super::provision_demand::{capacity_agents, demand_by_platform, Capacity, Demand, Requests};
use super::scheduling::{LiveAgent, LiveApp, ParallelRuns, Planner, Round, RoundError, RoundStep};
use crate::ptg::live::{self, WorkflowPlan, WorkflowPolicy};
use crate::ptg::Ptg;
use crate::queue::{AgentState, Queues};
use hetpilot_protocol::views::ScheduleView;
use hetpilot_protocol::AppId;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// What one round computes on, owned: it runs with no lock held.
pub struct RoundJob {
    pub(super) planner: Planner,
    pub(super) provision_planner: Option<Planner>,
    pub(super) stats: RunStats,
    pub(super) apps: Vec<LiveApp>,
    pub(super) agents: Vec<LiveAgent>,
    pub(super) weights: HashMap<String, f64>,
    /// Profiled platforms that can take pilots now, with their capacities; `None`
    /// without profiles (no provisioning round).
    pub(super) reachable: Option<BTreeMap<String, Capacity>>,
    /// What each application's tasks request besides cores, for the provisioning demand.
    pub(super) requests: Requests,
    /// What each variant of the applications with variants takes, for the same.
    pub(super) variant_requests: super::provision_demand::VariantRequests,
    /// What remains of each live workflow, for the workflow policy.
    pub(super) workflows: Vec<(AppId, Ptg)>,
    pub(super) workflow_policy: WorkflowPolicy,
    /// What a variant round reads (empty: no application declares variants).
    pub(super) variants: super::variant_round::LiveVariants,
    pub(super) now_ms: u64,
}

/// What a round decided, to hand back to [`Control::finish_round`](super::Control::finish_round).
pub struct RoundDone {
    pub(super) planner: Planner,
    pub(super) provision_planner: Option<Planner>,
    pub(super) round: Result<Round, RoundError>,
    pub(super) demand: Option<Result<Demand, RoundError>>,
}

impl RoundJob {
    /// The round's CPU work: the lease plan and, with profiles, the provisioning demand.
    pub fn run(self) -> RoundDone {
        self.run_observed(&mut |_| {})
    }

    /// [`Self::run`], telling `observe` as each step ends: the live manager times the
    /// steps with it (the core reads no clock).
    pub fn run_observed(mut self, observe: &mut dyn FnMut(RoundStep)) -> RoundDone {
        let mut round = self.planner.round_observed(
            &self.stats,
            &self.apps,
            &self.agents,
            &self.weights,
            self.now_ms,
            observe,
        );
        if let Ok(done) = &mut round {
            let input = super::variant_round::VariantRoundInput {
                stats: &self.stats,
                apps: &self.apps,
                agents: &self.agents,
                weights: &self.weights,
                explore_samples: 0,
                now_ms: self.now_ms,
            };
            match self.planner.variant_plan(&input, &self.variants) {
                Ok(Some(variants)) => {
                    done.plan.variants = variants.plan;
                    done.view.variants = variants.view;
                }
                Ok(None) => {}
                Err(e) => round = Err(e),
            }
        }
        if let Ok(round) = &mut round {
            if !self.workflows.is_empty() {
                round.plan.workflows = self.plan_workflows(&round.view);
                observe(RoundStep::Workflows);
            }
        }
        let demand = match (self.provision_planner.as_mut(), &self.reachable) {
            (Some(p), Some(reachable)) => {
                let capacity = capacity_agents(&self.agents, reachable);
                let no_placement = HashMap::new();
                let placed = round.as_ref().map_or(&no_placement, |r| &r.plan.parallel);
                Some(demand_by_platform(
                    p,
                    &self.stats,
                    &self.apps,
                    &capacity,
                    reachable,
                    &self.requests,
                    &self.variant_requests,
                    &self.weights,
                    placed,
                    self.now_ms,
                ))
            }
            _ => None,
        };
        if demand.is_some() {
            observe(RoundStep::Demand);
        }
        RoundDone {
            planner: self.planner,
            provision_planner: self.provision_planner,
            round,
            demand,
        }
    }
}

impl RoundJob {
    /// The workflow policy's plan for the live workflows, inside the cores the first
    /// level gave them (all active agents' slots when it gave them none, e.g. while no
    /// workflow has a ready task), seeded by the round's clock.
    fn plan_workflows(&mut self, view: &ScheduleView) -> HashMap<AppId, Arc<WorkflowPlan>> {
        let ids: HashSet<AppId> = self.workflows.iter().map(|(a, _)| *a).collect();
        let given: u64 = view
            .apps
            .iter()
            .filter(|a| ids.contains(&a.app))
            .flat_map(|a| a.cores.iter().map(|&c| u64::from(c)))
            .sum();
        let processors = if given > 0 {
            given
        } else {
            self.agents.iter().map(|a| u64::from(a.slots)).sum()
        };
        let processors = u32::try_from(processors).unwrap_or(u32::MAX);
        let (apps, graphs): (Vec<AppId>, Vec<Ptg>) =
            std::mem::take(&mut self.workflows).into_iter().unzip();
        match live::plan(self.workflow_policy, graphs, processors, self.now_ms) {
            Some(plans) => apps
                .into_iter()
                .zip(plans)
                .map(|(a, p)| (a, Arc::new(p)))
                .collect(),
            None => HashMap::new(),
        }
    }
}

/// What remains of every live workflow, for the workflow policy; none with
/// `round-robin` or past [`live::MAX_PLANNED_TASKS`] tasks in all.
pub(super) fn live_workflows(queues: &Queues, policy: WorkflowPolicy) -> Vec<(AppId, Ptg)> {
    if policy == WorkflowPolicy::RoundRobin {
        return Vec::new();
    }
    let live: Vec<_> = queues
        .apps()
        .filter(|a| !a.cancelled && a.counts.waiting + a.counts.leased + a.counts.running > 0)
        .filter_map(|a| Some((a, a.dag.as_ref()?)))
        .collect();
    if live.iter().map(|(_, d)| d.len()).sum::<usize>() > live::MAX_PLANNED_TASKS {
        return Vec::new();
    }
    live.into_iter()
        .filter_map(|(a, d)| Some((a.id, d.remaining_graph(a.task_slots())?)))
        .collect()
}

/// The applications with waiting tasks and the active agents, as a round sees them.
/// What each application with waiting tasks requests besides cores (only those that
/// request something), for the provisioning demand: GPU work asks for pilots only where
/// nodes have the GPUs and named counts it needs.
pub(super) fn live_requests(queues: &Queues, apps: &[LiveApp]) -> Requests {
    apps.iter()
        .filter_map(|live| {
            let app = queues.app(live.id)?;
            (!app.request.is_empty()).then(|| (live.id, app.request.clone()))
        })
        .collect()
}

/// The cores and request of each variant of every application with waiting tasks that
/// declares variants, for the provisioning demand: its work may go wherever one fits.
pub(super) fn live_variant_requests(
    queues: &Queues,
    apps: &[LiveApp],
) -> super::provision_demand::VariantRequests {
    apps.iter()
        .filter_map(|live| {
            let app = queues.app(live.id)?;
            (!app.variants.is_empty()).then(|| {
                let variants = app
                    .variants
                    .iter()
                    .map(|v| (v.cores, v.request.clone()))
                    .collect();
                (live.id, variants)
            })
        })
        .collect()
}

pub(super) fn live_state(queues: &Queues) -> (Vec<LiveApp>, Vec<LiveAgent>) {
    let apps = queues
        .apps()
        .filter(|a| !a.cancelled && a.ready_count() > 0)
        .map(|a| LiveApp {
            id: a.id,
            name: a.runtime.name.clone(),
            owner: a.owner.clone(),
            waiting: a.ready_count(),
            in_flight: a.counts.leased + a.counts.running,
            done: a.counts.done,
            cores: a
                .dag
                .as_ref()
                .map_or(a.runtime.cores, |d| d.widest().max(a.runtime.cores)),
            parallel: a
                .parallel_runs()
                .map(|(size, waiting)| ParallelRuns { size, waiting }),
            submitted_ms: a.submitted_ms,
        })
        .collect();
    let mut agents: Vec<LiveAgent> = queues
        .agents()
        .filter(|a| a.state == AgentState::Active)
        .map(|a| LiveAgent {
            id: a.id,
            platform: a.platform.clone(),
            slots: a.slots,
            // What it runs, and the slots it keeps as a member of another agent's
            // parallel run: both are busy until that run ends.
            held: a
                .held
                .keys()
                .map(|t| (t.app, queues.held_cores(*t)))
                .chain(a.member_of.iter().map(|h| (h.at.task.app, h.slots)))
                .collect(),
        })
        .collect();
    agents.sort_by_key(|a| a.id);
    (apps, agents)
}
