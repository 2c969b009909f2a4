//! Reservations for wide tasks (EASY backfilling), so that a task needing several slots
//! or several units of a resource at once never waits for ever while narrower tasks take
//! what it needs as it frees up.
//!
//! A *wide* application's tasks take more than one slot or more than one unit of some
//! resource (workflows, whose tasks mold to the free slots, are not wide). While one has
//! ready tasks, its head task holds a reservation: in application id order (submission
//! order, FCFS), each wide application gets one, on the active agent that may run it
//! (its owner, its TLPA platform, enough slots and resources in all) and holds no other
//! reservation, where it fits earliest by the held runs' expected ends (the pulling agent
//! first on a tie, then the lowest id). The agent then leases the reserved task as soon
//! as it has room for it, and meanwhile leases another task only if that does not move the
//! reservation's start later (see `queue::easy`); on an agent of a parallel task's
//! reservation, if it does not make that agent's share ready later than the run's start,
//! the latest of its agents' shadow times. A reservation ends when its task is
//! leased there, when its application has no ready task left, when its agent leaves, or
//! when a scheduling round places its application on another platform (where it can
//! start now; idle agents are woken for it); the next lease then makes the next one. A
//! task of a reserved application leased elsewhere does not move the reservation: the
//! next ready task inherits it.
//!
//! A reservation lists its agents with what each keeps: a parallel task's (`nodes` /
//! `procs`, see `queue::group_reserve`) holds several agents, and is leased only through
//! it, whether or not reservations are on for tasks on one node.
//!
//! Cost: with no wide application waiting a lease pays one emptiness check; with one, a
//! pass over the wide applications, and a shadow computation on agents that hold a
//! reservation (their held runs, sorted; one per agent of the reservation on the agents of
//! a parallel task's, for its start). Choosing an agent for a new reservation is a
//! shadow computation per active agent, once per reserved task (an application no agent
//! may run is not retried until the set of agents changes; a parallel task that found too
//! few agents free of other reservations, not until one is freed, see
//! `queue::group_reserve`).

use super::easy::{self, AgentLoad, HeldRun, Need, Phase};
use super::queues::{AgentState, LeaseBatch, Queues};
use hetpilot_protocol::protocol::TaskState;
use hetpilot_protocol::resources::{ResourceAmount, ResourceGrant, ResourceRequest};
use hetpilot_protocol::{AgentId, AppId, TaskRef};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What one agent keeps for a reservation: the slots and resources of the reserved run.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    /// The reserved application.
    pub app: AppId,
    /// The slots it needs there.
    pub cores: u32,
    /// The resources it needs there besides cores.
    pub request: ResourceRequest,
}

/// The reservation of a wide application's head task.
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    /// The agents that keep slots for it (one for a task on one node).
    pub agents: Vec<AgentId>,
    /// When it was made (unix ms).
    pub made_ms: u64,
    /// When it was expected to start when made (`None`: after runs with no estimate).
    pub shadow_ms: Option<u64>,
}

/// Every reservation, and the wide applications that may need one.
#[derive(Debug, Default)]
pub(crate) struct Reservations {
    /// Whether wide tasks get reservations (`[scheduler] reservations`).
    pub(crate) enabled: bool,
    pub(super) by_app: BTreeMap<AppId, Reservation>,
    pub(super) holds: HashMap<AgentId, Hold>,
    /// Wide applications not known to have ended.
    wide: BTreeSet<AppId>,
    /// Wide applications no agent may run, with the agent generation that found it.
    unplaceable: HashMap<AppId, u64>,
    /// Counts the holds dropped: agents that keep slots for no reservation only grow
    /// when it moves (see `queue::group_reserve`).
    pub(super) released: u64,
    /// Parallel applications that found too few agents keeping slots for no other
    /// reservation, with what they looked under (see `queue::group_reserve`).
    pub(super) no_room: HashMap<AppId, super::group_reserve::NoRoom>,
    /// The agent set (`Queues::agent_generation`) every reservation's agents were last
    /// checked under, `None` once a new lease plan may have placed an application
    /// elsewhere: until either changes, an agent may still hold what it was reserved for.
    pub(super) agents_checked: Option<u64>,
}

impl Reservations {
    /// None yet; wide tasks get reservations when `enabled`.
    pub(crate) fn new(enabled: bool) -> Self {
        Reservations {
            enabled,
            ..Reservations::default()
        }
    }

    fn drop_app(&mut self, app: AppId) {
        if let Some(r) = self.by_app.remove(&app) {
            for a in r.agents {
                self.holds.remove(&a);
            }
            self.released = self.released.wrapping_add(1);
        }
    }

    /// Notes that no agent may run `app` while the agents are those of `generation`.
    pub(super) fn mark_unplaceable(&mut self, app: AppId, generation: u64) {
        self.unplaceable.insert(app, generation);
    }

    /// Forgets `app` entirely (it ended and was forgotten).
    pub(crate) fn forget(&mut self, app: AppId) {
        self.drop_app(app);
        self.wide.remove(&app);
        self.unplaceable.remove(&app);
        self.no_room.remove(&app);
    }

    /// Drops the reservations agent `id` keeps slots for (it left).
    pub(crate) fn agent_left(&mut self, id: AgentId) {
        if let Some(hold) = self.holds.get(&id) {
            let app = hold.app;
            self.drop_app(app);
        }
    }
}

/// Whether tasks taking `cores` and `request` are wide (see the module doc).
pub(crate) fn is_wide(cores: u32, request: &ResourceRequest) -> bool {
    cores > 1 || request.0.values().any(|a| a.units() > ResourceAmount::UNIT)
}

impl Queues {
    /// Turns reservations on or off (`[scheduler] reservations`).
    pub(crate) fn set_reservations(&mut self, enabled: bool) {
        self.reservations = Reservations::new(enabled);
        let apps: Vec<AppId> = self.apps.keys().copied().collect();
        for app in apps {
            self.note_wide(app);
        }
    }

    /// Notes a new application that may need reservations.
    pub(super) fn note_wide(&mut self, app: AppId) {
        let Some(a) = self.apps.get(&app) else {
            return;
        };
        let wide = self.reservations.enabled && is_wide(a.runtime.cores, &a.request);
        // A workflow takes part for its parallel tasks only (its other tasks each have
        // their own cores).
        let parallel = a.parallel.is_some() || a.dag.as_ref().is_some_and(|d| d.has_parallel());
        if ((wide && a.dag.is_none()) || parallel) && !a.has_ended() {
            self.reservations.wide.insert(app);
        }
    }

    /// The reservation of `app`, if it has one.
    pub fn reservation(&self, app: AppId) -> Option<&Reservation> {
        self.reservations.by_app.get(&app)
    }

    /// What agent `id` keeps for a reservation, if anything.
    pub fn hold(&self, id: AgentId) -> Option<&Hold> {
        self.reservations.holds.get(&id)
    }

    /// The free slots of agent `id` kept idle for a reservation now.
    pub fn reserved_free_slots(&self, id: AgentId) -> u32 {
        self.hold(id)
            .map_or(0, |h| h.cores.min(self.free_slots(id)))
    }

    /// The reservation step of a lease by `id`: refreshes the reservations, then leases
    /// the task `id` keeps slots for if it has room for it now.
    pub(super) fn lease_reserved(
        &mut self,
        id: AgentId,
        remaining: &mut u32,
        now_ms: u64,
        batch: &mut LeaseBatch,
    ) {
        if self.reservations.wide.is_empty() {
            return;
        }
        self.refresh_reservations(id, now_ms);
        let Some(hold) = self.reservations.holds.get(&id) else {
            return;
        };
        let (app, cores) = (hold.app, hold.cores);
        if self
            .apps
            .get(&app)
            .is_some_and(|a| a.parallel_size().is_some())
        {
            self.lease_group(id, app, remaining, now_ms, batch);
        } else if cores <= self.free_slots(id) {
            // The slots are free now, as the manager counts them (every task the agent holds
            // counts until reported). A pull parked since before they freed asks for fewer
            // than the wide task needs and cannot grow: it gets the task all the same.
            let mut budget = (*remaining).max(cores);
            let before = budget;
            self.lease_one(id, app, &mut budget, now_ms, batch);
            *remaining = remaining.saturating_sub(before - budget);
        }
    }

    /// Drops stale reservations and makes one for each wide application with a ready task
    /// and none (see the module doc).
    fn refresh_reservations(&mut self, asking: AgentId, now_ms: u64) {
        // Whether an agent may hold an application changes only with the agent set or the
        // plan's placements (see `Reservations::agents_checked`), so a lease does not pay
        // a pass over every reserved agent.
        let recheck = self.reservations.agents_checked != Some(self.agent_generation);
        self.reservations.agents_checked = Some(self.agent_generation);
        let wide: Vec<AppId> = self.reservations.wide.iter().copied().collect();
        for app_id in wide {
            let (ended, ready) = match self.apps.get(&app_id) {
                Some(a) => (a.has_ended(), !a.cancelled && a.reservation_ready()),
                None => (true, false),
            };
            if ended {
                self.reservations.forget(app_id);
                continue;
            }
            if let Some(r) = self.reservations.by_app.get(&app_id) {
                let kept = ready
                    && (!recheck
                        || r.agents.iter().all(|a| {
                            self.agents
                                .get(a)
                                .is_some_and(|e| e.state == AgentState::Active)
                                && self.may_hold(*a, app_id)
                        }));
                if kept {
                    continue;
                }
                self.reservations.drop_app(app_id);
            }
            if !ready || self.reservations.unplaceable.get(&app_id) == Some(&self.agent_generation)
            {
                continue;
            }
            self.reserve(app_id, asking, now_ms);
        }
    }

    /// Whether agent `id` may ever run a task of `app` (its owner, its TLPA platform,
    /// enough slots and resources in all).
    pub(super) fn may_hold(&self, id: AgentId, app: AppId) -> bool {
        #[cfg(test)]
        self.may_hold_calls.set(self.may_hold_calls.get() + 1);
        let (Some(agent), Some(a)) = (self.agents.get(&id), self.apps.get(&app)) else {
            return false;
        };
        // A workflow's `cores` are its widest task's: its parallel tasks take shares.
        agent.state == AgentState::Active
            && (agent.slots >= a.runtime.cores || a.dag.is_some())
            && agent.only_user.as_ref().is_none_or(|u| *u == a.owner)
            && self.parallel.get(&app).is_none_or(|p| *p == agent.platform)
            && agent.pool.could_grant(&a.request)
    }

    /// Reserves the agent where `app`'s head task fits earliest (the agents, for a
    /// parallel task).
    fn reserve(&mut self, app: AppId, asking: AgentId, now_ms: u64) {
        let (cores, request, parallel, workflow) = {
            let a = &self.apps[&app];
            (
                a.runtime.cores,
                a.request.clone(),
                a.parallel_size(),
                a.dag.is_some(),
            )
        };
        if let Some(size) = parallel {
            return self.reserve_group(app, size, asking, now_ms);
        }
        if workflow {
            return;
        }
        let need = Need {
            cores,
            request: &request,
        };
        let mut any = false;
        let mut best: Option<((u64, bool, AgentId), Option<u64>)> = None;
        for agent in self.agents.values() {
            if !self.may_hold(agent.id, app) {
                continue;
            }
            any = true;
            if self.reservations.holds.contains_key(&agent.id) {
                continue;
            }
            let shadow = easy::shadow_ms(&self.load(agent.id), need, now_ms);
            let key = (shadow.unwrap_or(u64::MAX), agent.id != asking, agent.id);
            if best.as_ref().is_none_or(|(k, _)| key < *k) {
                best = Some((key, shadow));
            }
        }
        if !any {
            self.reservations
                .unplaceable
                .insert(app, self.agent_generation);
            return;
        }
        let Some(((_, _, agent), shadow_ms)) = best else {
            return;
        };
        tracing::debug!(%app, %agent, ?shadow_ms, cores, "reserved for a wide task");
        self.reservations.holds.insert(
            agent,
            Hold {
                app,
                cores,
                request,
            },
        );
        self.reservations.by_app.insert(
            app,
            Reservation {
                agents: vec![agent],
                made_ms: now_ms,
                shadow_ms,
            },
        );
    }

    /// Agent `id`'s held runs as the shadow computation sees them, queued ones in lease
    /// order.
    pub(super) fn load(&self, id: AgentId) -> AgentLoad<'_> {
        let agent = &self.agents[&id];
        let mut held: Vec<(u64, TaskRef)> = agent.held.iter().map(|(t, l)| (*l, *t)).collect();
        held.sort_unstable();
        // Slots kept for other agents' parallel runs end with those runs.
        let member_runs = agent.member_of.iter().map(|h| {
            let len_ms = self.expected_len_ms(h.at.task.app, &agent.platform);
            HeldRun {
                cores: h.slots,
                grant: None,
                phase: Phase::Started {
                    end_ms: len_ms
                        .filter(|_| h.leased_ms > 0)
                        .map(|l| h.leased_ms.saturating_add(l)),
                },
            }
        });
        let runs = member_runs
            .chain(held.into_iter().map(|(leased_ms, task)| {
                let len_ms = self.expected_len_ms(task.app, &agent.platform);
                let started = self
                    .apps
                    .get(&task.app)
                    .and_then(|a| a.tasks.get(task.index as usize))
                    .is_some_and(|s| s.state == TaskState::Running);
                // A lease restored from the store has no lease time (0): no known end.
                let phase = if started || leased_ms == 0 {
                    Phase::Started {
                        end_ms: len_ms
                            .filter(|_| leased_ms > 0)
                            .map(|l| leased_ms.saturating_add(l)),
                    }
                } else {
                    Phase::Queued { len_ms }
                };
                HeldRun {
                    cores: self.held_cores(task),
                    grant: agent.grants.get(&task),
                    phase,
                }
            }))
            .collect();
        AgentLoad {
            slots: agent.slots,
            pool: &agent.pool,
            runs,
        }
    }

    /// How long a run of `app` on `platform` is expected to last (see
    /// `queue::runtime_estimate`); a workflow's tasks differ too much for its measured
    /// mean, so only its timeout counts.
    fn expected_len_ms(&self, app: AppId, platform: &str) -> Option<u64> {
        let a = self.apps.get(&app)?;
        if a.dag.is_some() {
            return a.runtime.timeout_secs.map(|s| s.saturating_mul(1000));
        }
        self.estimates
            .expected_ms(app, platform, a.runtime.timeout_secs)
    }

    /// Whether leasing a task of `app` taking `cores` and `grant` (already taken from the
    /// pool) to `id` now would start the reservation `id` keeps slots for later.
    pub(super) fn backfill_refused(
        &self,
        id: AgentId,
        app: AppId,
        cores: u32,
        grant: &ResourceGrant,
        now_ms: u64,
    ) -> bool {
        if self.reservations.holds.is_empty() {
            return false;
        }
        let Some(hold) = self.reservations.holds.get(&id).filter(|h| h.app != app) else {
            return false;
        };
        let platform = &self.agents[&id].platform;
        let candidate = HeldRun {
            cores,
            grant: (!grant.is_empty()).then_some(grant),
            phase: Phase::Queued {
                len_ms: self.expected_len_ms(app, platform),
            },
        };
        let need = Need {
            cores: hold.cores,
            request: &hold.request,
        };
        if self
            .apps
            .get(&hold.app)
            .is_some_and(|a| a.parallel_size().is_some())
        {
            let start = self.group_start_ms(hold.app, now_ms);
            return easy::delays_past(&self.load(id), need, candidate, now_ms, start);
        }
        easy::delays(&self.load(id), need, candidate, now_ms)
    }

    /// When a parallel application's reserved run could start: the latest of its agents'
    /// shadow times for their shares (`None`: after some run with no expected end).
    fn group_start_ms(&self, app: AppId, now_ms: u64) -> Option<u64> {
        let r = self.reservations.by_app.get(&app)?;
        let mut start = now_ms;
        for a in &r.agents {
            let hold = self.reservations.holds.get(a)?;
            let need = Need {
                cores: hold.cores,
                request: &hold.request,
            };
            start = start.max(easy::shadow_ms(&self.load(*a), need, now_ms)?);
        }
        Some(start)
    }

    /// Drops each reservation that keeps slots on a platform other than the one the
    /// plan now places its application on: the round saw it start there now, so it must
    /// not wait for the slots it kept elsewhere. Returns whether one was dropped (the
    /// next lease reserves it again, on the placed platform).
    pub(super) fn drop_moved_reservations(&mut self) -> bool {
        if self.parallel.is_empty() || self.reservations.by_app.is_empty() {
            return false;
        }
        let moved: Vec<AppId> = self
            .reservations
            .by_app
            .iter()
            .filter(|(app, r)| {
                self.parallel.get(app).is_some_and(|placed| {
                    r.agents
                        .iter()
                        .any(|a| self.agents.get(a).is_none_or(|e| e.platform != *placed))
                })
            })
            .map(|(app, _)| *app)
            .collect();
        for &app in &moved {
            tracing::debug!(%app, "reservation dropped: placed on another platform");
            self.reservations.drop_app(app);
        }
        !moved.is_empty()
    }

    /// After a task of `app` was leased to `id`: the reservation it used ends, as does
    /// one whose application has no ready task left.
    pub(super) fn reservation_after_lease(&mut self, id: AgentId, app: AppId) {
        if self.reservations.by_app.is_empty() {
            return;
        }
        let consumed = self
            .reservations
            .holds
            .get(&id)
            .is_some_and(|h| h.app == app);
        let drained = self.apps.get(&app).is_none_or(|a| !a.reservation_ready());
        if consumed || (drained && self.reservations.by_app.contains_key(&app)) {
            self.reservations.drop_app(app);
        }
    }
}
