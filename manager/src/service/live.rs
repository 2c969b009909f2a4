//! The live manager's use of the scheduling core: it keeps the online profile up to date
//! from task reports (rebuilt from the store at start-up), runs a scheduling round on
//! every change that matters and at least every `[scheduler] interval_ms`, and hands the
//! decision to the queues as their lease plan. Rounds never run inside a pull.

use super::bandwidth::Bandwidths;
use super::profiling::RunStats;
use super::provision_demand::{capacity_agents, demand_by_platform, Capacity};
use super::scheduling::{LiveAgent, LiveApp, Planner};
use super::usage::Usage;
use super::{now_ms, Manager, Principal, ServiceError};
use crate::config::Settings;
use crate::db::{AgentResources, AppResources, Measured, Run};
use crate::provision::profile::{PlatformProfile, StagingProfile};
use crate::queue::{AgentState, Queues};
use crate::sched::SchedError;
use hetpilot_protocol::protocol::{Outcome, TaskResult};
use hetpilot_protocol::views::{BandwidthRow, ScheduleView, UserUsage};
use hetpilot_protocol::AgentId;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

/// Everything the rounds read besides the queues.
pub(super) struct Live {
    planner: Option<Planner>,
    pub(super) stats: RunStats,
    /// Measured transfer bandwidths per platform × endpoint (staging).
    pub(super) bandwidths: Bandwidths,
    /// What each profiled platform's staging numbers are before anything is measured.
    pub(super) staging_priors: HashMap<String, StagingProfile>,
    /// The I/O bandwidth configured for each file store, by endpoint (`store:NAME`).
    pub(super) store_io_mib_per_s: HashMap<String, f64>,
    /// Each profiled platform's capacity, and the planner of the provisioning rounds.
    pub(super) capacities: BTreeMap<String, Capacity>,
    provision_planner: Option<Planner>,
    /// Waiting cores per platform as the last provisioning round split them (None: no
    /// round yet, every platform sees all the waiting work).
    pub(super) provision_demand: Option<super::provision_demand::Demand>,
    /// Relative platform speeds as of the last round (fairshare normalizes by them).
    pub(super) speeds: HashMap<String, f64>,
    usage: Usage,
    agents: HashMap<AgentId, AgentResources>,
    view: ScheduleView,
}

impl Live {
    /// The state rebuilt from what the store recorded.
    pub(super) fn new(settings: &Settings, measured: Measured) -> Result<Live, SchedError> {
        // One planner for the lease plan, one for the provisioning rounds (each keeps its
        // previous allocation).
        let (planner, provision_planner) = match settings.scheduler.settings()? {
            Some(s) => (
                Some(Planner::new(s.clone(), &settings.scheduler)?),
                Some(Planner::new(s, &settings.scheduler)?),
            ),
            None => (None, None),
        };
        let mut usage = Usage::new(&settings.fairshare);
        for app in measured.apps {
            usage.app(app);
        }
        for agent in &measured.agents {
            usage.agent(agent);
        }
        let mut live = Live {
            planner,
            stats: RunStats::default(),
            bandwidths: Bandwidths::default(),
            staging_priors: HashMap::new(),
            store_io_mib_per_s: settings
                .storage
                .iter()
                .filter_map(|s| Some((format!("store:{}", s.name), s.io_mib_per_s?)))
                .collect(),
            capacities: BTreeMap::new(),
            provision_planner,
            provision_demand: None,
            speeds: HashMap::new(),
            usage,
            agents: measured.agents.into_iter().map(|a| (a.agent, a)).collect(),
            view: ScheduleView {
                policy: settings.scheduler.policy.clone(),
                ..ScheduleView::default()
            },
        };
        // Profile first, so that every charge uses the speeds measured over all runs.
        for run in &measured.runs {
            live.profile_run(run);
        }
        live.speeds = live.stats.speeds();
        for run in &measured.runs {
            live.charge(run);
        }
        tracing::info!(
            runs = measured.runs.len(),
            "online profile, fairshare usage and bandwidths rebuilt from the store"
        );
        Ok(live)
    }

    /// A successful run feeds the profile; any run's transfers feed the bandwidths.
    fn profile_run(&mut self, run: &Run) {
        let Some(agent) = self.agents.get(&run.agent) else {
            return;
        };
        for t in &run.transfers {
            self.bandwidths.add(&agent.platform, t);
        }
        if run.outcome == Outcome::Success {
            self.stats.add(
                run.app,
                &agent.platform,
                &run.co_runners,
                run.wall_ms / 1000.0,
            );
        }
    }

    /// Any run is charged to its application's owner.
    fn charge(&mut self, run: &Run) {
        let speed = self
            .agents
            .get(&run.agent)
            .and_then(|a| self.speeds.get(&a.platform))
            .copied()
            .unwrap_or(1.0);
        self.usage.charge(run, speed);
    }
}

/// The runs of the results a report records (duplicates left out).
pub(super) fn runs(agent: AgentId, results: &[TaskResult], duplicate: &[bool]) -> Vec<Run> {
    results
        .iter()
        .zip(duplicate)
        .filter(|(_, dup)| !**dup)
        .map(|(r, _)| Run {
            app: r.task.app,
            agent,
            outcome: r.outcome,
            wall_ms: r.measurements.wall_ms,
            started_ms: r.measurements.started_at_ms,
            co_runners: r.measurements.co_runners.clone(),
            transfers: r
                .staging
                .as_ref()
                .map(|s| s.transfers.clone())
                .unwrap_or_default(),
        })
        .collect()
}

/// The applications with waiting tasks and the active agents, as a round sees them.
fn live_state(queues: &Queues) -> (Vec<LiveApp>, Vec<LiveAgent>) {
    let apps = queues
        .apps()
        .filter(|a| !a.cancelled && a.counts.waiting > 0)
        .map(|a| LiveApp {
            id: a.id,
            name: a.runtime.name.clone(),
            owner: a.owner.clone(),
            waiting: a.counts.waiting,
            in_flight: a.counts.leased + a.counts.running,
            done: a.counts.done,
            cores: a.runtime.cores,
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
            held: a
                .held
                .keys()
                .map(|t| (t.app, queues.app(t.app).map_or(1, |x| x.runtime.cores)))
                .collect(),
        })
        .collect();
    agents.sort_by_key(|a| a.id);
    (apps, agents)
}

impl Manager {
    pub(super) fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes what the profiled platforms' profiles say: their staging numbers and how far
    /// the provisioner may grow them.
    pub fn use_profiles(&self, profiles: &[PlatformProfile]) {
        let mut live = self.live();
        live.staging_priors = profiles
            .iter()
            .map(|p| (p.name.clone(), p.staging))
            .collect();
        live.capacities = profiles
            .iter()
            .map(|p| {
                let capacity = Capacity {
                    nodes: p.max_running,
                    cores_per_node: p.cores_per_node,
                };
                (p.name.clone(), capacity)
            })
            .collect();
        drop(live);
        self.replan();
    }

    /// Something that matters changed: run a round soon.
    pub(super) fn replan(&self) {
        self.replan.notify_one();
    }

    pub(super) fn app_submitted(&self, app: AppResources) {
        self.live().usage.app(app);
        self.replan();
    }

    pub(super) fn agent_registered(&self, agent: AgentResources) {
        let mut live = self.live();
        live.usage.agent(&agent);
        live.agents.insert(agent.agent, agent);
        drop(live);
        self.replan();
    }

    /// Recorded runs update the profile and the owners' usage.
    pub(super) fn runs_recorded(&self, runs: &[Run]) {
        let mut live = self.live();
        for run in runs {
            live.profile_run(run);
            live.charge(run);
        }
    }

    /// Runs scheduling rounds until the manager is dropped (nothing with `round-robin`).
    pub fn spawn_scheduler(self: &Arc<Self>) {
        if self.live().planner.is_none() {
            return;
        }
        let weak = Arc::downgrade(self);
        let replan = self.replan.clone();
        let interval = Duration::from_millis(self.settings.scheduler.interval_ms);
        tokio::spawn(async move {
            loop {
                let Some(manager) = weak.upgrade() else { break };
                // A round is CPU work: off the async runtime, so pulls and heartbeats are
                // served meanwhile.
                let round = tokio::task::spawn_blocking(move || manager.schedule_round());
                if let Err(e) = round.await {
                    tracing::error!(error = %e, "scheduling round aborted");
                }
                let _ = tokio::time::timeout(interval, replan.notified()).await;
            }
        });
    }

    /// One round: the live state in, a new lease plan out. The rounds run on copies, with
    /// no lock held, so reports and reads never wait behind them.
    pub fn schedule_round(&self) {
        let (apps, agents) = live_state(&self.queues());
        let unavailable = self.unavailable_platforms();
        let now = now_ms();
        let (mut planner, mut provision_planner, stats, weights, mut reachable) = {
            let mut live = self.live();
            let Some(planner) = live.planner.take() else {
                return; // a round is already running
            };
            live.speeds = live.stats.speeds();
            let weights = live
                .usage
                .weights(apps.iter().map(|a| a.owner.as_str()), now);
            let provision_planner = live.provision_planner.take();
            (
                planner,
                provision_planner,
                live.stats.clone(),
                weights,
                live.capacities.clone(),
            )
        };
        let round = planner.round(&stats, &apps, &agents, &weights, now);
        let profiled = !reachable.is_empty();
        // A platform that cannot take pilots now takes no share of the demand.
        reachable.retain(|name, _| !unavailable.contains(name));
        let demand = match provision_planner.as_mut() {
            Some(p) if profiled => {
                let capacity = capacity_agents(&agents, &reachable);
                Some(demand_by_platform(
                    p, &stats, &apps, &capacity, &weights, now,
                ))
            }
            _ => None,
        };
        let plan = {
            let mut live = self.live();
            live.planner = Some(planner);
            live.provision_planner = provision_planner;
            match demand {
                Some(Ok(demand)) => live.provision_demand = Some(demand),
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "provisioning round failed; pilots follow the last demand")
                }
                None => {}
            }
            match round {
                Ok(round) => {
                    live.view = round.view;
                    Some(round.plan)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "scheduling round failed; leases keep the previous plan");
                    None
                }
            }
        };
        if let Some(plan) = plan {
            self.queues().set_plan(plan);
        }
    }

    /// The last round's allocation; a user sees only their own applications.
    pub fn schedule(&self, who: &Principal) -> Result<ScheduleView, ServiceError> {
        let Principal::User { name, admin } = who else {
            return Err(ServiceError::Forbidden(
                "this call needs a user token, not an agent credential".into(),
            ));
        };
        let mut view = self.live().view.clone();
        if !admin {
            view.apps.retain(|a| a.owner == *name);
        }
        Ok(view)
    }

    /// Measured transfer bandwidths per platform × endpoint (any user: they describe
    /// platforms, not anyone's applications).
    pub fn bandwidths(&self, who: &Principal) -> Result<Vec<BandwidthRow>, ServiceError> {
        if !matches!(who, Principal::User { .. }) {
            return Err(ServiceError::Forbidden(
                "this call needs a user token, not an agent credential".into(),
            ));
        }
        Ok(self.live().bandwidths.rows())
    }

    /// Fairshare usage per user; a user sees only their own row.
    pub fn usage(&self, who: &Principal) -> Result<Vec<UserUsage>, ServiceError> {
        let Principal::User { name, admin } = who else {
            return Err(ServiceError::Forbidden(
                "this call needs a user token, not an agent credential".into(),
            ));
        };
        let live = self.live();
        let mut table = live
            .usage
            .table(live.usage.owners().chain([name.as_str()]), now_ms());
        if !admin {
            table.retain(|u| u.user == *name);
        }
        Ok(table)
    }
}
