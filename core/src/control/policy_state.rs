//! What the control plane has learned and decided besides the queues: the online runtime
//! profile, fairshare usage, measured bandwidths, what the platform profiles assume, the
//! planners of the two kinds of rounds (each keeps its previous allocation), and the last
//! round's outcome. Rebuilt from the store's measurements at start-up.

use super::bandwidth::Bandwidths;
use super::profiling::RunStats;
use super::provision_demand::{Capacity, Demand};
use super::scheduling::Planner;
use super::settings::ControlSettings;
use super::staging_model::StagingProfile;
use super::usage::Usage;
use super::{AgentResources, Measured, Run};
use crate::ptg::live::WorkflowPolicy;
use crate::sched::SchedError;
use hetpilot_protocol::protocol::Outcome;
use hetpilot_protocol::views::ScheduleView;
use hetpilot_protocol::AgentId;
use std::collections::{BTreeMap, HashMap};

pub(super) struct PolicyState {
    /// The planner of the lease plan; `None` while a round holds it (or with `round-robin`).
    pub(super) planner: Option<Planner>,
    /// Whether a scheduler is configured at all.
    pub(super) scheduling: bool,
    /// How the rounds plan competing workflows.
    pub(super) workflow_policy: WorkflowPolicy,
    pub(super) stats: RunStats,
    /// Measured transfer bandwidths per platform × endpoint (staging).
    pub(super) bandwidths: Bandwidths,
    /// What each profiled platform's staging numbers are before anything is measured.
    pub(super) staging_priors: HashMap<String, StagingProfile>,
    /// The I/O bandwidth configured for each file store, by endpoint (`store:NAME`).
    pub(super) store_io_mib_per_s: HashMap<String, f64>,
    /// Each profiled platform's capacity, and the planner of the provisioning rounds.
    pub(super) capacities: BTreeMap<String, Capacity>,
    pub(super) provision_planner: Option<Planner>,
    /// Waiting cores per platform as the last provisioning round split them (None: no
    /// round yet, every platform sees all the waiting work).
    pub(super) provision_demand: Option<Demand>,
    /// Relative platform speeds as of the last round (fairshare normalizes by them).
    pub(super) speeds: HashMap<String, f64>,
    pub(super) usage: Usage,
    pub(super) agents: HashMap<AgentId, AgentResources>,
    pub(super) view: ScheduleView,
}

impl PolicyState {
    /// The state rebuilt from what the store recorded.
    pub(super) fn new(
        settings: &ControlSettings,
        measured: Measured,
    ) -> Result<PolicyState, SchedError> {
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
        for carried in &measured.carried {
            usage.carry(carried);
        }
        let mut state = PolicyState {
            scheduling: planner.is_some(),
            workflow_policy: settings.scheduler.workflows,
            planner,
            stats: RunStats::default(),
            bandwidths: Bandwidths::default(),
            staging_priors: HashMap::new(),
            store_io_mib_per_s: settings.store_io_mib_per_s.clone(),
            capacities: BTreeMap::new(),
            provision_planner,
            provision_demand: None,
            speeds: HashMap::new(),
            usage,
            agents: measured.agents.into_iter().map(|a| (a.agent, a)).collect(),
            view: ScheduleView {
                policy: settings.scheduler.policy.to_string(),
                ..ScheduleView::default()
            },
        };
        // Profile first, so that every charge uses the speeds measured over all runs.
        for run in &measured.runs {
            state.profile_run(run);
        }
        state.speeds = state.stats.speeds();
        for run in &measured.runs {
            state.charge(run);
        }
        Ok(state)
    }

    /// A successful run feeds the profile; any run's transfers feed the bandwidths.
    pub(super) fn profile_run(&mut self, run: &Run) {
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
            if let Some(co_runners) = &run.device_co_runners {
                self.stats
                    .devices
                    .add(run.app, &agent.platform, co_runners, run.wall_ms / 1000.0);
            }
            if let Some(variant) = &run.variant {
                self.stats
                    .add_variant(run.app, &agent.platform, variant, run.wall_ms / 1000.0);
            }
        }
    }

    /// Any run is charged to its application's owner.
    pub(super) fn charge(&mut self, run: &Run) {
        let speed = self
            .agents
            .get(&run.agent)
            .and_then(|a| self.speeds.get(&a.platform))
            .copied()
            .unwrap_or(1.0);
        self.usage.charge(run, speed);
    }
}
