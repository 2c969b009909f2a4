//! The control plane: every decision the manager makes, as a pure state machine. Events
//! come in as method calls with the clock as an argument (an application submitted, an
//! agent joined, pulled, heartbeat, reported its runs with their measurements and
//! transfers, left or went silent; a staging plan made; a round begun and finished);
//! decisions come out as return values and state the shell reads (task leases and the
//! lease plan per agent, pilot demand per platform, staging partitions and steals, TLPA
//! placements, usage and priorities). No I/O: no clock, no files, no network, no
//! database; randomness only from the planners' seeded RNGs.
//!
//! The live manager (`service`) is a thin shell around one [`Control`]: it authenticates
//! and bounds requests, feeds events, persists the [`Change`]s that come back and answers.
//! `hetpilot simulate live` drives the very same `Control` with simulated agents, or
//! replays a live manager's [`journal`] and checks every decision comes out the same.

mod affinity_view;
pub(crate) mod bandwidth;
mod device_profile;
mod effects;
mod fairshare_config;
mod forget;
#[cfg(test)]
mod forget_tests;
pub mod journal;
mod measured;
mod parallel_demand;
#[cfg(test)]
mod parallel_workflow_tests;
mod pilot_book;
mod pilot_groups;
#[cfg(test)]
mod pilot_tests;
mod pilots;
pub(crate) mod placement;
mod policy_state;
pub(crate) mod profiling;
pub(crate) mod provision_demand;
#[cfg(test)]
mod replan_tests;
mod report;
#[cfg(test)]
mod resource_demand_tests;
mod resource_fit;
mod round;
#[cfg(test)]
mod round_tests;
mod scheduler_config;
pub(crate) mod scheduling;
mod settings;
pub mod simulation;
pub(crate) mod staging_model;
mod staging_plan;
pub(crate) mod usage;
mod variant_round;
#[cfg(test)]
mod variant_tests;
pub mod wake;
#[cfg(test)]
mod workflow_tests;

pub use affinity_view::{allocation_fairness, AffinityJob, MAX_AFFINITY_APPS};
pub use effects::Effects;
pub use fairshare_config::FairshareConfig;
pub use forget::Forgotten;
pub(crate) use journal::{Input, Output};
pub use measured::{AgentResources, AppResources, CarriedUsage, Measured, Run};
pub use pilot_book::{queued_pilot, CredentialFate, PilotEvent, PilotOutcome};
pub use pilot_groups::PilotRefused;
pub use provision_demand::Capacity;
pub use report::{
    clamp_to_lease, ReportAnswer, ReportHistory, ResultClass, StoredAttempt, LEASE_SLACK_MS,
};
pub use resource_fit::NodeResources;
pub use round::{RoundDone, RoundJob};
pub use scheduler_config::{LivePolicy, SchedulerConfig};
pub use scheduling::{RoundError, RoundStep};
pub use settings::ControlSettings;
pub use staging_model::{request_files, RequestFiles, StagingProfile};
pub use staging_plan::{PlannedStaging, StagingJob};
pub use wake::Wake;

use crate::ptg::live::WorkflowPolicy;
use crate::queue::{AgentEntry, AgentState, LeaseBatch, Partitions, Queues, ReportError};
use crate::sched::SchedError;
use hetpilot_protocol::protocol::{Outcome, TaskAttempt};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::views::{BandwidthRow, ScheduleView, UserUsage};
use hetpilot_protocol::{AgentId, AppId};
use journal::Journal;
use policy_state::PolicyState;
use std::collections::{BTreeMap, HashSet};

/// The manager's queues and everything its policies learned and decided.
pub struct Control {
    queues: Queues,
    policy: PolicyState,
    journal: Journal,
    /// Every pilot and its group of agents.
    pilots: pilot_book::PilotBook,
    /// What the inputs since the last [`Control::take_effects`] did (see [`effects`]).
    effects: Effects,
}

/// Why a finished round changed less than it would have.
#[derive(Debug, Default)]
pub struct RoundWarnings {
    /// The scheduling round failed: leases keep the previous plan.
    pub round: Option<scheduling::RoundError>,
    /// The provisioning round failed: pilots follow the previous demand.
    pub demand: Option<scheduling::RoundError>,
}

/// An agent as it joins: its node and what it may run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentJoin {
    /// The id the manager gave it.
    pub agent: AgentId,
    /// The platform it runs on.
    pub platform: String,
    /// Its node's host name.
    pub hostname: String,
    /// Tasks it may hold at once (each task's cores count against them).
    pub slots: u32,
    /// Cores of its node (at least `slots`).
    pub cores: u32,
    /// Memory of its node, MiB.
    pub memory_mb: u64,
    /// The batch job that started it, if any.
    pub batch_job_id: Option<String>,
    /// A per-user pilot's agent runs only this user's tasks.
    pub only_user: Option<String>,
    /// The GPUs and named counts it offers (checked at registration).
    #[serde(default)]
    pub resources: hetpilot_protocol::resources::ResourceOffer,
}

impl Control {
    /// A control plane that knows what the store measured (nothing on a first start).
    pub fn new(settings: &ControlSettings, measured: Measured) -> Result<Control, SchedError> {
        let mut queues = Queues::new(settings.lease_timeout_ms);
        queues.set_heartbeats_per_second(settings.heartbeats_per_second);
        queues.set_reservations(settings.scheduler.reservations);
        let platforms: std::collections::HashMap<AgentId, &str> = measured
            .agents
            .iter()
            .map(|a| (a.agent, a.platform.as_str()))
            .collect();
        for run in measured
            .runs
            .iter()
            .filter(|r| r.outcome == Outcome::Success)
        {
            if let Some(platform) = platforms.get(&run.agent) {
                queues.note_runtime(run.app, platform, run.wall_ms);
            }
        }
        let policy = PolicyState::new(settings, measured)?;
        queues.set_workflow_planning(
            policy.scheduling && policy.workflow_policy != WorkflowPolicy::RoundRobin,
        );
        Ok(Control {
            queues,
            policy,
            journal: Journal::default(),
            pilots: pilot_book::PilotBook::default(),
            effects: Effects::default(),
        })
    }

    /// The queues, to read.
    pub fn queues(&self) -> &Queues {
        &self.queues
    }

    /// Whether scheduling rounds run at all (not with `policy = "round-robin"`).
    pub fn schedules(&self) -> bool {
        self.policy.scheduling
    }

    /// Restores the applications and agents the store recorded, the resources each
    /// held task was granted and the agents of each parallel run under way (start-up
    /// only, before any event). A parallel run with a member gone is not restored half:
    /// it goes back to its queue, and the changes saying so are among the effects.
    pub fn restore(
        &mut self,
        apps: Vec<crate::queue::AppEntry>,
        agents: Vec<AgentEntry>,
        grants: &std::collections::HashMap<
            hetpilot_protocol::TaskRef,
            hetpilot_protocol::resources::ResourceGrant,
        >,
        groups: Vec<(TaskAttempt, Vec<crate::queue::Member>)>,
        now_ms: u64,
    ) {
        for app in apps {
            self.queues.insert_app(app);
        }
        for agent in agents {
            self.queues.insert_agent(agent);
        }
        self.queues.reattach_leases(grants);
        self.journal.restored();
        let changes = self.queues.restore_groups(groups, now_ms);
        self.changed(changes);
    }

    /// The profiled platforms' staging numbers and how far the provisioner may grow them.
    pub fn use_profiles(
        &mut self,
        staging: BTreeMap<String, StagingProfile>,
        capacities: BTreeMap<String, Capacity>,
    ) {
        self.journal.input(|| Input::Profiles {
            staging: staging.clone(),
            capacities: capacities.clone(),
        });
        self.policy.staging_priors = staging.into_iter().collect();
        self.policy.capacities = capacities;
        self.effects.wake.replan = true;
    }

    /// An application arrives with every task waiting; `spec` is valid (the caller ran
    /// `spec.validate()`).
    pub fn submit(
        &mut self,
        app: AppId,
        owner: String,
        spec: AppSpec,
        template: hetpilot_protocol::template::Template,
        now_ms: u64,
    ) {
        self.journal.input(|| Input::Submit {
            app,
            owner: owner.clone(),
            spec: Box::new(spec.clone()),
            now_ms,
        });
        self.policy.usage.app(AppResources {
            app,
            owner: owner.clone(),
            cores: spec.cores,
            memory_mb: spec.memory_mb,
        });
        let data_intensive = spec.data_intensive;
        let workflow = spec.dag.is_some();
        let entry = crate::queue::AppEntry::new(app, owner, spec, template, now_ms);
        self.queues.insert_app(entry);
        self.effects.wake.replan = true;
        if self.queues.mark_ended(app, now_ms) {
            self.effects.wake.progress = true;
        }
        if data_intensive {
            // Its Het-HPS plan wakes the idle agents once bound; this, if it is late.
            self.effects
                .wake
                .merge(Wake::work_after(now_ms, wake::STAGING_PLAN_WAIT_MS));
        } else {
            self.effects.wake.work = true;
        }
        if workflow && self.queues.plans_workflows() {
            self.effects
                .wake
                .merge(wake::workflow_plan_deadline(now_ms));
        }
    }

    /// Cancels an application at `now_ms`: waiting tasks end now, running ones are to be
    /// killed. Returns whether that changed anything.
    pub fn cancel(&mut self, app: AppId, now_ms: u64) -> bool {
        self.journal.input(|| Input::Cancel { app, now_ms });
        let changes = self.queues.cancel(app);
        self.ended(changes, now_ms) > 0
    }

    /// An agent registered.
    pub fn agent_joined(&mut self, join: AgentJoin, now_ms: u64) {
        self.journal.input(|| Input::AgentJoined {
            join: join.clone(),
            now_ms,
        });
        let resources = AgentResources {
            agent: join.agent,
            platform: join.platform.clone(),
            slots: join.slots,
            memory_mb: join.memory_mb,
        };
        self.policy.usage.agent(&resources);
        self.policy.agents.insert(join.agent, resources);
        let mut entry =
            AgentEntry::new(join.agent, join.platform, join.hostname, join.slots, now_ms)
                .with_resources(join.resources);
        entry.batch_job_id = join.batch_job_id;
        entry.cores = join.cores.max(join.slots);
        entry.only_user = join.only_user;
        self.queues.insert_agent(entry);
        self.effects.wake.replan = true;
        if self.queues.plans_workflows() {
            // Its pulls wait this long for the round that plans the workflows for it.
            self.effects
                .wake
                .merge(wake::workflow_plan_deadline(now_ms));
        }
    }

    /// Leases up to `max_slots` worth of tasks to `agent` (see [`Queues::lease`]).
    pub fn lease(
        &mut self,
        agent: AgentId,
        max_slots: u32,
        now_ms: u64,
    ) -> Result<LeaseBatch, ReportError> {
        let mut batch = if self.pilots.holds(agent.0, now_ms) {
            // A multi-node pilot's agents get tasks once its credential is closed: nothing,
            // not even the wide task a reservation keeps its slots for.
            Ok(LeaseBatch::default())
        } else {
            self.queues.lease(agent, max_slots, now_ms)
        };
        if let Ok(b) = &mut batch {
            self.changed(std::mem::take(&mut b.changes));
        }
        self.journal.decided(
            || Input::Lease {
                agent,
                max_slots,
                now_ms,
            },
            || journal::lease_output(&batch),
        );
        batch
    }

    /// Runs an agent started (leased → running).
    pub fn started(
        &mut self,
        agent: AgentId,
        tasks: &[TaskAttempt],
        now_ms: u64,
    ) -> Result<(), ReportError> {
        self.journal.input(|| Input::Started {
            agent,
            tasks: tasks.to_vec(),
            now_ms,
        });
        let changes = self.queues.started(agent, tasks, now_ms)?;
        self.changed(changes);
        Ok(())
    }

    /// A heartbeat: whether the agent should drain, and the runs it should kill.
    pub fn heartbeat(
        &mut self,
        agent: AgentId,
        now_ms: u64,
    ) -> Result<(bool, Vec<TaskAttempt>), ReportError> {
        self.journal.input(|| Input::Heartbeat { agent, now_ms });
        self.queues.heartbeat(agent, now_ms)
    }

    /// What an agent says it holds against what it was leased (see [`Queues::reconcile`]).
    pub fn reconcile(
        &mut self,
        agent: AgentId,
        seen_up_to_ms: u64,
        held: &[TaskAttempt],
        now_ms: u64,
    ) -> Result<(), ReportError> {
        self.journal.input(|| Input::Reconcile {
            agent,
            seen_up_to_ms,
            held: held.to_vec(),
            now_ms,
        });
        let changes = self.queues.reconcile(agent, seen_up_to_ms, held, now_ms)?;
        self.ended(changes, now_ms);
        Ok(())
    }

    /// Declares lost every agent silent past the lease timeout; their tasks go back.
    /// Returns how many changes that made.
    pub fn expire(&mut self, now_ms: u64) -> usize {
        let changes = self.queues.expire(now_ms);
        if !changes.is_empty() {
            self.journal.input(|| Input::Expire { now_ms });
        }
        self.ended(changes, now_ms)
    }

    /// An agent leaves; what it still holds goes back to its queue.
    pub fn deregister(&mut self, agent: AgentId, now_ms: u64) -> Result<(), ReportError> {
        self.journal.input(|| Input::Deregister { agent, now_ms });
        let changes = self.queues.deregister(agent, now_ms)?;
        self.ended(changes, now_ms);
        Ok(())
    }

    /// The batch job of an agent's pilot ended under it: the agent is lost now and what it
    /// held goes back to its queue. Returns how many changes that made.
    pub fn pilot_ended(&mut self, agent: AgentId, reason: &str, now_ms: u64) -> usize {
        self.journal.input(|| Input::PilotEnded {
            agent,
            reason: reason.to_string(),
            now_ms,
        });
        let changes = self.queues.lose_agent(agent, reason, now_ms);
        self.ended(changes, now_ms)
    }

    /// Asks an agent to drain: it gets no more tasks.
    pub fn drain(&mut self, agent: AgentId) {
        self.journal.input(|| Input::Drain { agent });
        self.queues.drain(agent);
    }

    /// Binds a Het-HPS plan to an application's agents; false when it came too late.
    pub fn set_partitions(&mut self, app: AppId, partitions: Partitions) -> bool {
        self.journal.input(|| Input::Partitions {
            app,
            partitions: partitions.clone(),
        });
        let bound = self.queues.set_partitions(app, partitions);
        // Idle agents may take the planned tasks now.
        self.effects.wake.work |= bound;
        bound
    }

    /// Starts a round: copies what it reads and takes the planners. `None` without a
    /// scheduler or while another round runs. Platforms in `unavailable` cannot take
    /// pilots now and get no share of the provisioning demand.
    pub fn begin_round(&mut self, unavailable: &HashSet<String>, now_ms: u64) -> Option<RoundJob> {
        let planner = self.policy.planner.take()?;
        self.journal.input(|| Input::RoundBegan {
            unavailable: {
                let mut u: Vec<String> = unavailable.iter().cloned().collect();
                u.sort();
                u
            },
            now_ms,
        });
        let (apps, agents) = round::live_state(&self.queues);
        let workflows = round::live_workflows(&self.queues, self.policy.workflow_policy);
        let requests = round::live_requests(&self.queues, &apps);
        let variants = variant_round::live_variants(&self.queues);
        let variant_requests = round::live_variant_requests(&self.queues, &apps);
        let policy = &mut self.policy;
        policy.speeds = policy.stats.speeds();
        let weights = policy
            .usage
            .weights(apps.iter().map(|a| a.owner.as_str()), now_ms);
        let reachable = (!policy.capacities.is_empty()).then(|| {
            let mut r = policy.capacities.clone();
            r.retain(|name, _| !unavailable.contains(name));
            r
        });
        Some(RoundJob {
            planner,
            provision_planner: policy.provision_planner.take(),
            stats: policy.stats.clone(),
            apps,
            agents,
            weights,
            reachable,
            requests,
            variant_requests,
            workflows,
            workflow_policy: policy.workflow_policy,
            variants,
            now_ms,
        })
    }

    /// Ends a round: puts the planners back and applies its decisions (the lease plan,
    /// the view, the provisioning demand). A failed round keeps the previous plan, a
    /// failed provisioning round the previous demand; the shell logs why.
    pub fn finish_round(&mut self, done: RoundDone) -> RoundWarnings {
        let policy = &mut self.policy;
        policy.planner = Some(done.planner);
        policy.provision_planner = done.provision_planner;
        let mut warnings = RoundWarnings::default();
        match done.demand {
            Some(Ok(demand)) => policy.provision_demand = Some(demand),
            Some(Err(e)) => warnings.demand = Some(e),
            None => {}
        }
        match done.round {
            Ok(round) => {
                let number = policy.view.round.saturating_add(1);
                policy.view = round.view;
                policy.view.round = number;
                self.effects.wake.work |= self.queues.set_plan(round.plan);
            }
            Err(e) => warnings.round = Some(e),
        }
        let output = self.round_output(&warnings);
        self.journal.decided(|| Input::RoundFinished, || output);
        warnings
    }

    /// What a finished round decided, as the journal records it.
    pub(crate) fn round_output(&self, warnings: &RoundWarnings) -> Output {
        match &warnings.round {
            Some(e) => Output::Refused(e.to_string()),
            None => Output::Allocation(
                self.policy
                    .view
                    .apps
                    .iter()
                    .map(|a| (a.app, a.cores.clone()))
                    .collect(),
            ),
        }
    }

    /// The live shell's clock as the round just finished took effect, for the view (a
    /// failed round changes nothing: the view in effect keeps its time).
    pub fn round_took_effect(&mut self, now_ms: u64) {
        let view = &mut self.policy.view;
        if view.round > 0 && view.effective_ms == 0 {
            view.effective_ms = now_ms;
        }
    }

    /// The last round's allocation.
    pub fn schedule_view(&self) -> &ScheduleView {
        &self.policy.view
    }

    /// Cores' worth of waiting tasks `platform` should get pilots for, per owner: its part
    /// of the last provisioning round's split, or, before any round or without a
    /// scheduler, every application's waiting tasks × its cores, a run of several agents
    /// as the whole nodes it takes there (none where it cannot fit).
    pub fn demand_by_user(&self, platform: &str) -> BTreeMap<String, u64> {
        if let Some(demand) = &self.policy.provision_demand {
            return demand.get(platform).cloned().unwrap_or_default();
        }
        let agents: Vec<scheduling::LiveAgent> = self
            .queues
            .agents()
            .filter(|a| a.state == AgentState::Active && a.platform == platform)
            .map(|a| scheduling::LiveAgent {
                id: a.id,
                platform: a.platform.clone(),
                slots: a.slots,
                held: Vec::new(),
            })
            .collect();
        let mut by_user = BTreeMap::new();
        for a in self.queues.apps().filter(|a| !a.cancelled) {
            let mut waiting = a.ready_count();
            let mut cores = 0u64;
            if let Some((size, runs)) = a.parallel_runs() {
                let capacities = &self.policy.capacities;
                let run =
                    parallel_demand::run_cores_at_capacity(size, platform, &agents, capacities);
                cores = run.map_or(0, |c| c.saturating_mul(runs));
                waiting = waiting.saturating_sub(runs);
            }
            let cores =
                cores.saturating_add(waiting.saturating_mul(u64::from(a.runtime.cores.max(1))));
            if cores > 0 {
                *by_user.entry(a.owner.clone()).or_insert(0) += cores;
            }
        }
        by_user
    }

    /// Measured transfer bandwidths per platform × endpoint.
    pub fn bandwidth_rows(&self) -> Vec<BandwidthRow> {
        self.policy.bandwidths.rows()
    }

    /// Fairshare usage of every owner known, and of `also` (who may own nothing yet).
    pub fn usage_table(&self, also: Option<&str>, now_ms: u64) -> Vec<UserUsage> {
        let usage = &self.policy.usage;
        usage.table(usage.owners().chain(also), now_ms)
    }

    /// The inputs journaled since the last call (empty unless journaling is on).
    pub fn take_journal(&mut self) -> Vec<journal::Entry> {
        self.journal.take()
    }

    /// Starts journaling every input (and checked output) from now on. `settings` must be
    /// the ones this control plane was made with.
    pub fn start_journal(&mut self, settings: &ControlSettings) {
        self.journal.start(settings);
        // What the pilots' registration window is, set before (at start-up).
        let window_ms = self.pilots.window_ms();
        if window_ms > 0 {
            self.journal.input(|| Input::PilotWindow { window_ms });
        }
    }
}
