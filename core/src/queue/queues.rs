//! The queues of every application and the leases of every agent.

use super::app::AppEntry;
use super::changes::Change;
use super::heartbeat_cadence::{self, Cadence};
use super::partitions::Partitions;
use super::plan::{wanted, LeasePlan};
use super::resource_pool::ResourcePool;
use hetpilot_protocol::protocol::{
    AppRuntime, Assignment, Outcome, TaskAttempt, TaskResult, TaskState,
};
use hetpilot_protocol::resources::{ResourceGrant, ResourceOffer};
use hetpilot_protocol::{AgentId, AppId, TaskRef};
use std::collections::{BTreeMap, HashMap, HashSet};
use thiserror::Error;

/// Where an agent is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentState {
    /// Registered and taking tasks.
    Active,
    /// Asked to stop pulling, finish its tasks and deregister.
    Draining,
    /// Missed heartbeats for the lease timeout: its tasks went back to their queues.
    Lost,
    /// Deregistered.
    Ended,
}

impl AgentState {
    /// The state's name as stored and shown: `active`, `draining`, `lost` or `ended`.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Active => "active",
            AgentState::Draining => "draining",
            AgentState::Lost => "lost",
            AgentState::Ended => "ended",
        }
    }
}

/// One agent as the queues know it: its node, its state and the tasks it holds.
#[derive(Debug)]
pub struct AgentEntry {
    /// The agent.
    pub id: AgentId,
    /// The platform it runs on.
    pub platform: String,
    /// Its node's host name.
    pub hostname: String,
    /// Tasks it may hold at once (each task's cores count against them).
    pub slots: u32,
    /// Cores the agent's node has (at least its slots): the most CPU a run there can use.
    pub cores: u32,
    /// The one user whose tasks it may run (a per-user pilot); `None`: anyone's.
    pub only_user: Option<String>,
    /// The batch job that started it, if any.
    pub batch_job_id: Option<String>,
    /// When it registered (unix ms).
    pub registered_ms: u64,
    /// When the manager last heard from it (unix ms); the lease timeout counts from here.
    pub last_seen_ms: u64,
    /// Where it is in its life.
    pub state: AgentState,
    /// Tasks leased to this agent and not yet reported, with when they were leased.
    pub held: HashMap<TaskRef, u64>,
    /// Applications whose runtime description this agent has received.
    pub(crate) sent_apps: HashSet<AppId>,
    /// Runs the agent must kill (their application was cancelled).
    pub(crate) kill: Vec<TaskAttempt>,
    /// The manager asked it to drain (it was not only told to stop by its batch system).
    pub drain_ordered: bool,
    /// Its GPUs and named counts, with what its runs hold of them.
    pub(crate) pool: ResourcePool,
    /// What each held task was granted from the pool (only non-empty grants).
    pub(crate) grants: HashMap<TaskRef, ResourceGrant>,
    /// Slots it keeps busy for other agents' parallel runs (see `queue::group_lease`).
    pub(crate) member_of: Vec<super::group_lease::MemberHold>,
}

impl AgentEntry {
    /// An active agent registered at `now_ms` with as many cores as slots, holding nothing.
    pub fn new(id: AgentId, platform: String, hostname: String, slots: u32, now_ms: u64) -> Self {
        AgentEntry {
            id,
            platform,
            hostname,
            slots,
            cores: slots,
            only_user: None,
            batch_job_id: None,
            registered_ms: now_ms,
            last_seen_ms: now_ms,
            state: AgentState::Active,
            held: HashMap::new(),
            sent_apps: HashSet::new(),
            kill: Vec::new(),
            drain_ordered: false,
            pool: ResourcePool::default(),
            grants: HashMap::new(),
            member_of: Vec::new(),
        }
    }

    /// The agent offering `offer` besides its cores.
    pub fn with_resources(mut self, offer: ResourceOffer) -> Self {
        self.pool = ResourcePool::new(offer);
        self
    }

    /// Its GPUs and named counts, with what its runs hold of them.
    pub fn pool(&self) -> &ResourcePool {
        &self.pool
    }

    /// What the run of `task` it holds was granted, if anything.
    pub fn grant(&self, task: TaskRef) -> Option<&ResourceGrant> {
        self.grants.get(&task)
    }

    /// Forgets the lease of `task`, giving back what it was granted; whether it held it.
    pub(crate) fn drop_lease(&mut self, task: TaskRef) -> bool {
        if let Some(grant) = self.grants.remove(&task) {
            self.pool.release(&grant);
        }
        self.held.remove(&task).is_some()
    }
}

/// Why the queues refuse what an agent says.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ReportError {
    /// No agent of that id ever registered.
    #[error("agent {0} is not registered")]
    UnknownAgent(AgentId),
    /// The agent was declared lost, or deregistered.
    #[error("agent {0} was declared lost after missing heartbeats; register again")]
    AgentGone(AgentId),
    /// No such application or task index.
    #[error("task {0} does not exist")]
    UnknownTask(TaskRef),
    /// The attempt belongs to another agent.
    #[error("task {task} attempt {attempt} was never leased to agent {agent}")]
    Foreign {
        /// The task.
        task: TaskRef,
        /// The attempt the agent named.
        attempt: u32,
        /// The agent that named it.
        agent: AgentId,
    },
}

/// What the queues alone can say about a reported result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportCheck {
    /// The task is leased to this agent under this attempt: record it.
    Current,
    /// Not the current lease: the store's attempt history decides (late, duplicate, foreign).
    NeedsHistory,
}

/// Tasks handed to one agent.
#[derive(Debug, Default)]
pub struct LeaseBatch {
    /// The lease time (manager time, unix ms), later than any handed out before.
    pub lease_ms: u64,
    /// Runtimes of the applications this agent had not been sent yet.
    pub apps: Vec<AppRuntime>,
    /// The leased tasks.
    pub tasks: Vec<Assignment>,
    /// The variant each leased task runs as, by name (`None`: no variants), as `tasks`.
    pub variants: Vec<Option<String>>,
    /// The changes the lease made, to persist before answering.
    pub changes: Vec<Change>,
}

/// Every application's queue and every agent's leases: the manager's live picture of
/// every task.
#[derive(Debug)]
pub struct Queues {
    pub(super) apps: BTreeMap<AppId, AppEntry>,
    pub(super) agents: HashMap<AgentId, AgentEntry>,
    /// Round-robin position: the first application considered by the next lease.
    rr_next: AppId,
    /// The configured lease timeout; more agents than `heartbeats_per_second` allows at
    /// that cadence stretch it (see `heartbeat_cadence`).
    lease_timeout_ms: u64,
    /// The heartbeat rate the cadence aims for (none: a fixed cadence).
    heartbeats_per_second: Option<u32>,
    /// Agents live (active or draining) as last counted, plus those joined since.
    live_agents: u64,
    /// The most `live_agents` since the queues started: what the cadence follows.
    most_live_agents: u64,
    /// The newest lease time handed out; each lease call gets a later one.
    last_lease_ms: u64,
    /// The last scheduling round's wishes (empty: round-robin only).
    pub(super) plan: LeasePlan,
    /// Exploration tasks sent per (application, platform) since the plan was set.
    pub(super) explored: HashMap<(AppId, String), u32>,
    /// The plan's platform for each multi-core application (TLPA).
    pub(super) parallel: HashMap<AppId, String>,
    /// Het-HPS partitions of data-intensive applications (see `queue::staging`).
    pub(super) partitions: HashMap<AppId, Partitions>,
    /// Bumped whenever the set of agents that may take tasks changes.
    pub(super) agent_generation: u64,
    /// Whether scheduling rounds plan workflows (a new workflow then waits briefly for
    /// its plan, see `queue::dag_lease`).
    pub(super) workflow_planning: bool,
    /// Reservations of wide tasks (see `queue::reservations`).
    pub(super) reservations: super::reservations::Reservations,
    /// Measured run lengths, for backfilling around reservations.
    pub(super) estimates: super::runtime_estimate::RuntimeEstimates,
    /// The last variant round's decision (see `queue::variant_lease`).
    pub(super) variant_plan: super::variant_lease::VariantLeasePlan,
    /// Exploration tasks sent per (application, platform, variant) since the plan was set.
    pub(super) explored_variants: HashMap<(AppId, String, usize), u32>,
    /// How many times a lease asked whether an agent may hold an application (the cost
    /// of reservations, which tests bound).
    #[cfg(test)]
    pub(super) may_hold_calls: std::cell::Cell<u64>,
}

impl Queues {
    pub(crate) fn new(lease_timeout_ms: u64) -> Self {
        Queues {
            apps: BTreeMap::new(),
            agents: HashMap::new(),
            rr_next: AppId(0),
            lease_timeout_ms,
            heartbeats_per_second: None,
            live_agents: 0,
            most_live_agents: 0,
            last_lease_ms: 0,
            plan: LeasePlan::default(),
            explored: HashMap::new(),
            parallel: HashMap::new(),
            partitions: HashMap::new(),
            agent_generation: 0,
            workflow_planning: false,
            reservations: super::reservations::Reservations::new(true),
            estimates: Default::default(),
            variant_plan: Default::default(),
            explored_variants: HashMap::new(),
            #[cfg(test)]
            may_hold_calls: Default::default(),
        }
    }

    /// Tells the queues whether scheduling rounds plan workflows.
    pub(crate) fn set_workflow_planning(&mut self, planning: bool) {
        self.workflow_planning = planning;
    }

    /// Whether scheduling rounds plan workflows (an unplanned one's tasks wait for it).
    pub(crate) fn plans_workflows(&self) -> bool {
        self.workflow_planning
    }

    /// How long an agent may stay silent before it is declared lost, milliseconds (the
    /// configured timeout, stretched for many agents: see [`Queues::cadence`]).
    pub fn lease_timeout_ms(&self) -> u64 {
        self.cadence().lease_timeout_ms
    }

    /// How often agents are to beat and how long one may stay silent, for the most agents
    /// live at once so far.
    pub fn cadence(&self) -> Cadence {
        heartbeat_cadence::cadence(
            self.lease_timeout_ms,
            self.heartbeats_per_second,
            self.most_live_agents,
        )
    }

    /// Aims the heartbeat cadence at `per_second` heartbeats (none: a fixed cadence).
    pub(crate) fn set_heartbeats_per_second(&mut self, per_second: Option<u32>) {
        self.heartbeats_per_second = per_second;
    }

    /// Counts `live` agents now; the cadence follows the most ever counted.
    fn count_live_agents(&mut self, live: u64) {
        self.live_agents = live;
        self.most_live_agents = self.most_live_agents.max(live);
    }

    pub(crate) fn insert_app(&mut self, mut app: AppEntry) {
        app.rebuild_index();
        let id = app.id;
        self.apps.insert(id, app);
        self.note_wide(id);
    }

    pub(crate) fn insert_agent(&mut self, agent: AgentEntry) {
        if matches!(agent.state, AgentState::Active | AgentState::Draining) {
            self.count_live_agents(self.live_agents.saturating_add(1));
        }
        self.agents.insert(agent.id, agent);
        self.agent_generation += 1;
    }

    /// After loading: gives every agent back the tasks recorded as leased to it, in one
    /// pass over all tasks, with the resources each was granted (`grants`, as recorded
    /// with the lease). Such leases count as older than any the agent can confirm.
    pub(crate) fn reattach_leases(&mut self, grants: &HashMap<TaskRef, ResourceGrant>) {
        for app in self.apps.values() {
            for (i, slot) in app.tasks.iter().enumerate() {
                let held = !slot.state.is_final() && slot.state != TaskState::Waiting;
                if let Some(agent) = slot
                    .agent
                    .filter(|_| held)
                    .and_then(|a| self.agents.get_mut(&a))
                {
                    let task = TaskRef {
                        app: app.id,
                        index: i as u64,
                    };
                    agent.held.insert(task, 0);
                    if let Some(grant) = grants.get(&task).filter(|g| !g.is_empty()) {
                        agent.pool.hold(grant);
                        agent.grants.insert(task, grant.clone());
                    }
                }
            }
        }
    }

    /// The application `id`, if known.
    pub fn app(&self, id: AppId) -> Option<&AppEntry> {
        self.apps.get(&id)
    }

    /// Every application, cancelled and finished ones included, by id.
    pub fn apps(&self) -> impl Iterator<Item = &AppEntry> {
        self.apps.values()
    }

    /// The agent `id`, if it ever registered.
    pub fn agent(&self, id: AgentId) -> Option<&AgentEntry> {
        self.agents.get(&id)
    }

    /// Every agent, in no particular order.
    pub fn agents(&self) -> impl Iterator<Item = &AgentEntry> {
        self.agents.values()
    }

    #[cfg(test)]
    pub(crate) fn has_waiting(&self) -> bool {
        self.apps
            .values()
            .any(|a| !a.cancelled && a.counts.waiting > 0)
    }

    fn active_agent(&mut self, id: AgentId, now_ms: u64) -> Result<&mut AgentEntry, ReportError> {
        let agent = self
            .agents
            .get_mut(&id)
            .ok_or(ReportError::UnknownAgent(id))?;
        match agent.state {
            AgentState::Lost | AgentState::Ended => Err(ReportError::AgentGone(id)),
            AgentState::Active | AgentState::Draining => {
                agent.last_seen_ms = now_ms;
                Ok(agent)
            }
        }
    }

    /// Records a heartbeat; returns whether the agent should drain and the runs to kill.
    pub(crate) fn heartbeat(
        &mut self,
        id: AgentId,
        now_ms: u64,
    ) -> Result<(bool, Vec<TaskAttempt>), ReportError> {
        let agent = self.active_agent(id, now_ms)?;
        Ok((
            agent.state == AgentState::Draining,
            std::mem::take(&mut agent.kill),
        ))
    }

    /// Asks an agent to drain: it gets no more tasks.
    pub(crate) fn drain(&mut self, id: AgentId) {
        if let Some(agent) = self.agents.get_mut(&id) {
            if agent.state == AgentState::Active {
                agent.state = AgentState::Draining;
                agent.drain_ordered = true;
                self.agent_left(id);
            }
        }
    }

    /// Replaces the lease plan (the last scheduling round's decision); returns whether
    /// idle agents may lease something they could not: a workflow that waited for its
    /// first plan has one now, or a reserved application was placed on another platform
    /// (its reservation is dropped, so it starts there, see
    /// `Self::drop_moved_reservations`). Leasing is otherwise work conserving: a new plan
    /// reorders what agents lease, but makes nothing leasable that was not.
    pub(crate) fn set_plan(&mut self, mut plan: LeasePlan) -> bool {
        self.parallel = std::mem::take(&mut plan.parallel);
        self.reservations.agents_checked = None;
        let mut newly_leasable = self.drop_moved_reservations();
        self.variant_plan = std::mem::take(&mut plan.variants);
        self.explored_variants.clear();
        let workflows = std::mem::take(&mut plan.workflows);
        for app in self.apps.values_mut() {
            if let Some(dag) = &mut app.dag {
                let waited = !dag.planned();
                dag.set_plan(workflows.get(&app.id).cloned());
                newly_leasable |= waited && dag.planned();
            }
        }
        self.plan = plan;
        self.explored.clear();
        newly_leasable
    }

    /// Leases up to `max_slots` worth of tasks to `agent`. The lease plan goes first:
    /// multi-core applications TLPA placed on this platform, exploration tasks for this
    /// platform, then the agent's planned slots in proportion, then the applications with
    /// cores on its platform; whatever is left goes round-robin across every application
    /// with waiting tasks, so no slot idles while a task it may run waits. A multi-core
    /// task goes only to an agent with enough free slots, on its TLPA platform if it has one.
    /// Before all that, the agent takes the wide task it keeps slots for if they are free
    /// now; while it keeps them, it takes other tasks only if they do not start the wide
    /// one later (see `queue::reservations`).
    pub(crate) fn lease(
        &mut self,
        id: AgentId,
        max_slots: u32,
        now_ms: u64,
    ) -> Result<LeaseBatch, ReportError> {
        // Strictly increasing, so a heartbeat's "seen up to" never covers a lease in flight.
        let lease_ms = now_ms.max(self.last_lease_ms + 1);
        self.last_lease_ms = lease_ms;
        let agent = self.active_agent(id, now_ms)?;
        let mut batch = LeaseBatch {
            lease_ms,
            ..LeaseBatch::default()
        };
        if agent.state == AgentState::Draining {
            return Ok(batch);
        }
        // Slots kept for other agents' parallel runs look free to the agent itself.
        let mut remaining = if agent.member_of.is_empty() {
            max_slots
        } else {
            max_slots.min(self.free_slots(id))
        };
        self.lease_reserved(id, &mut remaining, now_ms, &mut batch);
        let plan = std::mem::take(&mut self.plan);
        self.lease_planned(id, &plan, &mut remaining, now_ms, &mut batch);
        self.plan = plan;
        self.lease_round_robin(id, &mut remaining, now_ms, &mut batch);
        Ok(batch)
    }

    /// The plan's part of a lease (see [`Self::lease`]).
    fn lease_planned(
        &mut self,
        id: AgentId,
        plan: &LeasePlan,
        remaining: &mut u32,
        now_ms: u64,
        batch: &mut LeaseBatch,
    ) {
        let name = self.agents[&id].platform.clone();
        if !self.parallel.is_empty() {
            // A workflow placed for its parallel tasks' runs is placed for their
            // reservation only: its other tasks are not drawn to that platform.
            let mut parallel: Vec<AppId> = self
                .parallel
                .iter()
                .filter(|(app, p)| {
                    **p == name
                        && self
                            .apps
                            .get(app)
                            .is_some_and(|a| a.dag.is_none() || a.parallel_size().is_none())
                })
                .map(|(app, _)| *app)
                .collect();
            parallel.sort();
            for app in parallel {
                while self.lease_one(id, app, remaining, now_ms, batch) > 0 {}
            }
        }
        self.lease_variant_exploration(id, &name, remaining, now_ms, batch);
        let platform = plan.platforms.get(&name);
        let targets = plan.agents.get(&id);
        if platform.is_none() && targets.is_none() {
            return;
        }
        if let Some(p) = platform.filter(|p| !p.explore.is_empty()) {
            for &(app, budget) in &p.explore {
                let sent = self
                    .explored
                    .get(&(app, name.clone()))
                    .copied()
                    .unwrap_or(0);
                if sent < budget && self.lease_one(id, app, remaining, now_ms, batch) > 0 {
                    self.explored.insert((app, name.clone()), sent + 1);
                }
            }
        }
        if let Some(targets) = targets {
            let mut held: HashMap<AppId, u32> = HashMap::new();
            for task in self.agents[&id].held.keys() {
                *held.entry(task.app).or_insert(0) += self.held_cores(*task);
            }
            let mut want = wanted(targets, &held, *remaining);
            // One task at a time to the application furthest below its goal.
            while let Some(k) = (0..want.len())
                .filter(|&k| want[k].1 > 0)
                .max_by_key(|&k| (want[k].1, std::cmp::Reverse(k)))
            {
                let cores = self.lease_one(id, want[k].0, remaining, now_ms, batch);
                want[k].1 = if cores == 0 {
                    0
                } else {
                    want[k].1.saturating_sub(cores)
                };
            }
        }
        if let Some(p) = platform {
            let mut open = vec![true; p.order.len()];
            while *remaining > 0 && open.iter().any(|o| *o) {
                for (k, &app) in p.order.iter().enumerate() {
                    if open[k] && self.lease_one(id, app, remaining, now_ms, batch) == 0 {
                        open[k] = false;
                    }
                }
            }
        }
    }

    /// Round-robin across every application with waiting tasks.
    fn lease_round_robin(
        &mut self,
        id: AgentId,
        remaining: &mut u32,
        now_ms: u64,
        batch: &mut LeaseBatch,
    ) {
        if *remaining == 0 {
            return;
        }
        let order: Vec<AppId> = self
            .apps
            .range(self.rr_next..)
            .chain(self.apps.range(..self.rr_next))
            .filter(|(_, a)| !a.cancelled && a.counts.waiting > 0)
            .map(|(id, _)| *id)
            .collect();
        let mut exhausted = vec![false; order.len()];
        let mut last_served = None;
        while *remaining > 0 && exhausted.iter().any(|e| !e) {
            for (k, app_id) in order.iter().enumerate() {
                if exhausted[k] || *remaining == 0 {
                    continue;
                }
                if self.lease_one(id, *app_id, remaining, now_ms, batch) == 0 {
                    exhausted[k] = true;
                } else {
                    last_served = Some(*app_id);
                }
            }
        }
        if let Some(last) = last_served {
            self.rr_next = AppId(last.0 + 1);
        }
    }

    /// The cores task `task`'s current lease takes (1 for an unknown application).
    pub(crate) fn held_cores(&self, task: TaskRef) -> u32 {
        self.apps
            .get(&task.app)
            .map_or(1, |a| a.held_cores(task.index))
    }

    /// The slots agent `id` has free now, if it is known (see [`Self::free_slots`]).
    pub fn free_slots_of(&self, id: AgentId) -> Option<u32> {
        self.agents.contains_key(&id).then(|| self.free_slots(id))
    }

    /// The slots agent `id` has free now (its slots less the cores of what it holds).
    pub(super) fn free_slots(&self, id: AgentId) -> u32 {
        let agent = &self.agents[&id];
        let held: u32 = agent.held.keys().map(|t| self.held_cores(*t)).sum();
        let kept: u32 = agent.member_of.iter().map(|h| h.slots).sum();
        agent.slots.saturating_sub(held).saturating_sub(kept)
    }

    /// Whether a task of multi-core `app` may go to agent `id`: the agent is on the
    /// application's TLPA platform (if it has one) and has enough free slots now.
    fn parallel_fits(&self, id: AgentId, app: AppId) -> bool {
        let agent = &self.agents[&id];
        if self
            .parallel
            .get(&app)
            .is_some_and(|p| *p != agent.platform)
        {
            return false;
        }
        self.apps[&app].runtime.cores <= self.free_slots(id)
    }

    /// Leases one waiting task of `app_id` to `id` if it fits in `remaining` slots;
    /// returns the slots it takes (0: nothing leased).
    pub(super) fn lease_one(
        &mut self,
        id: AgentId,
        app_id: AppId,
        remaining: &mut u32,
        now_ms: u64,
        batch: &mut LeaseBatch,
    ) -> u32 {
        let Some(app) = self.apps.get(&app_id) else {
            return 0;
        };
        if app.dag.is_some() {
            return self.lease_workflow_task(id, app_id, remaining, now_ms, batch);
        }
        if !app.variants.is_empty() {
            return self.lease_variant(id, app_id, None, remaining, now_ms, batch);
        }
        // A parallel task is leased only to its reservation's agents, all at once.
        if app.cancelled || app.runtime.cores > *remaining || app.parallel.is_some() {
            return 0;
        }
        if let Some(user) = &self.agents[&id].only_user {
            if app.owner != *user {
                return 0;
            }
        }
        if app.runtime.cores > 1 && !self.parallel_fits(id, app_id) {
            return 0;
        }
        if app.request.is_empty() && !self.cpu_task_fits(id, app.runtime.cores) {
            return 0;
        }
        let cores = app.runtime.cores;
        let agent = self.agents.get_mut(&id).expect("checked by the caller");
        let request = &self.apps[&app_id].request;
        let Some(grant) = agent.take_resources(app_id, request, &self.plan.devices) else {
            return 0;
        };
        if self.backfill_refused(id, app_id, cores, &grant, now_ms) {
            self.agents
                .get_mut(&id)
                .expect("checked by the caller")
                .pool
                .release(&grant);
            return 0;
        }
        let app = self.apps.get_mut(&app_id).expect("looked up above");
        let agent = self.agents.get_mut(&id).expect("checked by the caller");
        let planned = self
            .partitions
            .get_mut(&app_id)
            .and_then(|p| p.next(id, |t| app.tasks[t as usize].state == TaskState::Waiting));
        let Some(index) = planned.or_else(|| app.pop_waiting(id)) else {
            agent.pool.release(&grant);
            return 0;
        };
        self.lease_task(id, app_id, index, cores, grant, remaining, now_ms, batch)
    }

    /// Leases task `index` of `app_id`, which takes `cores` and `grant` (already taken
    /// from the agent's pool), to `id`; returns `cores`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lease_task(
        &mut self,
        id: AgentId,
        app_id: AppId,
        index: u64,
        cores: u32,
        grant: ResourceGrant,
        remaining: &mut u32,
        now_ms: u64,
        batch: &mut LeaseBatch,
    ) -> u32 {
        let app = self.apps.get_mut(&app_id).expect("checked by the caller");
        *remaining = remaining.saturating_sub(cores);
        let slot = &mut app.tasks[index as usize];
        slot.attempt += 1;
        slot.agent = Some(id);
        let attempt = slot.attempt;
        app.set_state(index, TaskState::Leased);
        let task = TaskRef { app: app_id, index };
        let at = TaskAttempt { task, attempt };
        let variant = app.task_variant(index);
        batch.changes.push(Change::Leased {
            at,
            agent: id,
            now_ms,
            resources: grant.clone(),
            variant: variant.map(|v| v.name.clone()),
        });
        batch.variants.push(variant.map(|v| v.name.clone()));
        batch.tasks.push(Assignment {
            task,
            attempt,
            argv: app.argv(index),
            input: app.inputs.input_string(index),
            files: app.task_files(index),
            cores: (app.dag.is_some() || variant.is_some()).then_some(cores),
            resources: grant.clone(),
            hosts: Vec::new(),
            launcher: None,
        });
        let agent = self.agents.get_mut(&id).expect("checked by the caller");
        agent.held.insert(task, batch.lease_ms);
        if !grant.is_empty() {
            agent.grants.insert(task, grant);
        }
        if agent.sent_apps.insert(app_id) {
            batch.apps.push(app.runtime.clone());
        }
        self.reservation_after_lease(id, app_id);
        cores
    }

    /// Marks runs as started (leased → running).
    pub(crate) fn started(
        &mut self,
        id: AgentId,
        started: &[TaskAttempt],
        now_ms: u64,
    ) -> Result<Vec<Change>, ReportError> {
        self.active_agent(id, now_ms)?;
        let mut changes = Vec::new();
        for at in started {
            let Some(app) = self.apps.get_mut(&at.task.app) else {
                continue;
            };
            let Some(slot) = app.tasks.get(at.task.index as usize) else {
                continue;
            };
            if slot.agent == Some(id)
                && slot.attempt == at.attempt
                && slot.state == TaskState::Leased
            {
                app.set_state(at.task.index, TaskState::Running);
                changes.push(Change::Started { at: *at, now_ms });
            }
        }
        Ok(changes)
    }

    /// Classifies a reported result without touching anything.
    pub(crate) fn check_result(
        &self,
        id: AgentId,
        result: &TaskResult,
    ) -> Result<ReportCheck, ReportError> {
        if !self.agents.contains_key(&id) {
            return Err(ReportError::UnknownAgent(id));
        }
        let task = result.task;
        let slot = self
            .apps
            .get(&task.app)
            .and_then(|a| a.tasks.get(task.index as usize))
            .ok_or(ReportError::UnknownTask(task))?;
        let current = slot.agent == Some(id)
            && slot.attempt == result.attempt
            && matches!(slot.state, TaskState::Leased | TaskState::Running);
        Ok(if current {
            ReportCheck::Current
        } else {
            ReportCheck::NeedsHistory
        })
    }

    /// Records a result that is either current or a late result of a real earlier lease
    /// of this agent (the caller checked the history). A task completes at most once:
    /// a result for a task that already ended is recorded as a run, never as a completion.
    pub(crate) fn apply_result(&mut self, id: AgentId, result: TaskResult) -> Vec<Change> {
        let task = result.task;
        let attempt = result.attempt;
        let outcome = result.outcome;
        let mut changes = vec![Change::Result {
            result: Box::new(result),
        }];
        let mut dropped = false;
        if let Some(agent) = self.agents.get_mut(&id) {
            if agent.drop_lease(task) {
                agent.kill.retain(|k| k.task != task);
                dropped = true;
            }
        }
        let Some(mut app) = self.apps.get_mut(&task.app) else {
            return changes;
        };
        if dropped && app.groups.contains_key(&task.index) {
            self.end_group_of(id, task);
            app = self.apps.get_mut(&task.app).expect("looked up above");
        }
        let slot = app.tasks[task.index as usize];
        if slot.state.is_final() {
            return changes;
        }
        let is_current = slot.agent == Some(id) && slot.attempt == attempt;
        let next = match (outcome, is_current) {
            (Outcome::Success, _) => TaskState::Done,
            (_, false) => return changes, // a late failure: the task was already requeued
            (_, true) if slot.counted_attempts() >= app.max_attempts => TaskState::Failed,
            (_, true) => TaskState::Waiting,
        };
        if !is_current {
            // A late success while another agent holds the task: that run is now redundant.
            if let Some(other) = slot.agent.and_then(|a| self.agents.get_mut(&a)) {
                if other.held.contains_key(&task) && slot.state != TaskState::Waiting {
                    other.kill.push(TaskAttempt {
                        task,
                        attempt: slot.attempt,
                    });
                }
            }
        }
        let app = self.apps.get_mut(&task.app).expect("looked up above");
        if next == TaskState::Done {
            let secs = changes_wall_secs(&changes);
            let app_cores = app.runtime.cores;
            if let Some(dag) = &mut app.dag {
                dag.record_run(task.index, app_cores, secs);
            }
        }
        app.set_state(task.index, next);
        if next == TaskState::Waiting {
            app.enqueue(task.index);
        }
        let slot = app.tasks[task.index as usize];
        changes.push(Change::TaskState {
            task,
            state: next,
            attempt: slot.attempt,
            agent: slot.agent,
        });
        settle(app, task.index, next, &mut changes);
        changes
    }

    /// Declares lost every agent silent for longer than the lease timeout and puts its
    /// tasks back in their queues (or fails them when their attempts are used up).
    pub(crate) fn expire(&mut self, now_ms: u64) -> Vec<Change> {
        let timeout_ms = self.lease_timeout_ms();
        let mut live = 0u64;
        let lost: Vec<AgentId> = self
            .agents
            .values()
            .filter(|a| matches!(a.state, AgentState::Active | AgentState::Draining))
            .inspect(|_| live += 1)
            .filter(|a| now_ms.saturating_sub(a.last_seen_ms) > timeout_ms)
            .map(|a| a.id)
            .collect();
        self.count_live_agents(live);
        let mut changes = Vec::new();
        for id in lost {
            let reason = format!("agent {id} missed heartbeats for {timeout_ms} ms");
            changes.extend(self.release_agent(id, AgentState::Lost, &reason, now_ms));
        }
        changes
    }

    /// An agent whose pilot's batch job ended under it (cancelled from outside, its node
    /// lost) is declared lost now, not after the lease timeout: what it held goes back to
    /// its queue. Nothing happens to an agent that already left or was lost.
    pub(crate) fn lose_agent(&mut self, id: AgentId, reason: &str, now_ms: u64) -> Vec<Change> {
        let live = self
            .agents
            .get(&id)
            .is_some_and(|a| matches!(a.state, AgentState::Active | AgentState::Draining));
        if !live {
            return Vec::new();
        }
        self.release_agent(id, AgentState::Lost, reason, now_ms)
    }

    /// An agent leaves; anything it still holds goes back to its queue.
    pub(crate) fn deregister(
        &mut self,
        id: AgentId,
        now_ms: u64,
    ) -> Result<Vec<Change>, ReportError> {
        self.active_agent(id, now_ms)?;
        Ok(self.release_agent(
            id,
            AgentState::Ended,
            "agent deregistered while holding it",
            now_ms,
        ))
    }

    fn release_agent(
        &mut self,
        id: AgentId,
        state: AgentState,
        reason: &str,
        now_ms: u64,
    ) -> Vec<Change> {
        let Some(agent) = self.agents.get_mut(&id) else {
            return Vec::new();
        };
        let was_active = agent.state == AgentState::Active;
        agent.state = state;
        agent.kill.clear();
        let mut held: Vec<TaskRef> = agent.held.keys().copied().collect();
        held.sort();
        for task in &held {
            agent.drop_lease(*task);
        }
        for task in &held {
            self.end_group_of(id, *task);
        }
        if was_active {
            self.agent_left(id);
        }
        let mut changes = self.lose_member(id, now_ms);
        changes.extend(self.give_back(id, &held, reason, now_ms));
        changes.push(Change::AgentEnded {
            agent: id,
            state: state.as_str(),
            now_ms,
        });
        changes
    }

    /// Ends the current attempts of `tasks` (held by `id`) without a result: lost to the
    /// infrastructure, not to the task, so each goes back to its queue and the attempt is
    /// counted apart from `max_attempts`.
    /// Agent `id`'s lease of `task` ended: if it headed a parallel run, the group ends.
    fn end_group_of(&mut self, id: AgentId, task: TaskRef) {
        let heads = self
            .apps
            .get(&task.app)
            .and_then(|a| a.groups.get(&task.index))
            .is_some_and(|g| g.members[0].agent == id);
        if heads {
            self.end_group(task);
        }
    }

    pub(super) fn give_back(
        &mut self,
        id: AgentId,
        tasks: &[TaskRef],
        reason: &str,
        now_ms: u64,
    ) -> Vec<Change> {
        let mut changes = Vec::new();
        for &task in tasks {
            let Some(app) = self.apps.get_mut(&task.app) else {
                continue;
            };
            let slot = app.tasks[task.index as usize];
            if slot.agent != Some(id) || slot.state.is_final() || slot.state == TaskState::Waiting {
                continue;
            }
            let at = TaskAttempt {
                task,
                attempt: slot.attempt,
            };
            changes.push(Change::AttemptLost {
                at,
                now_ms,
                reason: reason.to_string(),
            });
            app.tasks[task.index as usize].lost = slot.lost.saturating_add(1);
            app.lost_attempts = app.lost_attempts.saturating_add(1);
            app.set_state(task.index, TaskState::Waiting);
            app.enqueue(task.index);
            changes.push(Change::TaskState {
                task,
                state: TaskState::Waiting,
                attempt: slot.attempt,
                agent: Some(id),
            });
        }
        changes
    }

    /// Compares what an agent says it holds with what it was leased: leases granted no later
    /// than the newest answer it has seen, but that it does not hold, never reached it (an
    /// answer lost in a manager crash) and go back to their queues.
    pub(crate) fn reconcile(
        &mut self,
        id: AgentId,
        seen_up_to_ms: u64,
        held: &[TaskAttempt],
        now_ms: u64,
    ) -> Result<Vec<Change>, ReportError> {
        let agent = self.active_agent(id, now_ms)?;
        let reported: HashSet<TaskRef> = held.iter().map(|a| a.task).collect();
        let mut missing: Vec<TaskRef> = agent
            .held
            .iter()
            .filter(|(task, leased)| **leased <= seen_up_to_ms && !reported.contains(task))
            .map(|(task, _)| *task)
            .collect();
        if missing.is_empty() {
            return Ok(Vec::new());
        }
        missing.sort();
        for task in &missing {
            agent.drop_lease(*task);
        }
        for task in &missing {
            self.end_group_of(id, *task);
        }
        Ok(self.give_back(id, &missing, "the lease never reached the agent", now_ms))
    }

    /// Cancels an application: waiting tasks end now; running ones are killed by their agents.
    pub(crate) fn cancel(&mut self, app_id: AppId) -> Vec<Change> {
        let Some(app) = self.apps.get_mut(&app_id) else {
            return Vec::new();
        };
        if app.cancelled {
            return Vec::new();
        }
        app.cancelled = true;
        self.partitions.remove(&app_id);
        let changes = vec![Change::AppCancelled { app: app_id }];
        for index in 0..app.tasks.len() as u64 {
            let slot = app.tasks[index as usize];
            if slot.state.is_final() {
                continue;
            }
            if let Some(agent) = slot.agent.and_then(|a| self.agents.get_mut(&a)) {
                let task = TaskRef { app: app_id, index };
                if agent.held.contains_key(&task) {
                    agent.kill.push(TaskAttempt {
                        task,
                        attempt: slot.attempt,
                    });
                }
            }
            app.set_state(index, TaskState::Cancelled);
        }
        app.clear_queue();
        changes
    }
}

/// The wall time of the run whose result `changes` starts with, seconds.
fn changes_wall_secs(changes: &[Change]) -> f64 {
    match changes.first() {
        Some(Change::Result { result }) => result.measurements.wall_ms / 1000.0,
        _ => f64::NAN,
    }
}

/// Releases or cancels a workflow task's descendants after it ended as `state`, recording
/// each cancellation.
fn settle(app: &mut AppEntry, index: u64, state: TaskState, changes: &mut Vec<Change>) {
    for d in app.settle(index, state) {
        let slot = app.tasks[d as usize];
        changes.push(Change::TaskState {
            task: TaskRef {
                app: app.id,
                index: d,
            },
            state: TaskState::Cancelled,
            attempt: slot.attempt,
            agent: slot.agent,
        });
    }
}
