//! Reservations of parallel tasks: the agents of one platform that will hold the next
//! run of a parallel application (`nodes` / `procs`), each keeping the slots the run
//! needs there as they free up (EASY: other tasks backfill only where they do not delay
//! them). The run is leased only through such a reservation, all its agents at once
//! (see `queue::group_lease`).
//!
//! The members are taken on one platform: its agents share a site (its network and
//! file systems), so one `mpirun` or `srun` can start ranks on all of them, while the
//! agents of one pilot's allocation alone would bound a task by one batch job's size.
//! The agents of one batch allocation (one pilot's group) are preferred whenever they
//! can hold the run: `srun` reaches only its own allocation's nodes. In each allocation,
//! then on each platform as a whole, the active agents the application may use and that
//! keep slots for no other reservation are taken in the order they can give their share
//! earliest (by their held runs' expected ends; the asking agent first on a tie, then the
//! lowest id), until the task's size is met; the choice whose members can all start
//! earliest wins (the asking agent's platform on a tie, then by name). Where the last
//! round's TLPA placed the application (the lease plan's `parallel`), only that
//! platform's agents may hold it (`may_hold`).

use super::easy::{self, Need};
use super::group_lease::choose_members;
use super::queues::Queues;
use super::reservations::{Hold, Reservation};
use hetpilot_protocol::parallel::ParallelSize;
use hetpilot_protocol::resources::ResourceRequest;
use hetpilot_protocol::{AgentId, AppId};
use std::collections::{BTreeMap, HashMap};

/// An agent and its slots (or the slots it gives a run).
type AgentSlots = (AgentId, u32);

/// An agent's turn for a reservation: when its share could start (`u64::MAX`: unknown),
/// whether it is not the asking agent, its id.
type Turn = (u64, bool, AgentId);

/// One pool's agents a parallel application may use.
#[derive(Default)]
struct PoolAgents {
    /// All of them (whether it could ever be placed there).
    all: Vec<AgentSlots>,
    /// Those that keep slots for no other reservation.
    free: Vec<AgentSlots>,
}

/// Agents that may hold one run: one batch allocation's (`Some(job)`), or a whole
/// platform's (`None`).
type Pool<'a> = (&'a str, Option<&'a str>);

/// The members chosen in one pool, with when they can all start.
struct Choice<'a> {
    /// Whether they may span allocations, the start, whether it is not the asking
    /// agent's platform, the pool.
    key: (bool, u64, bool, Pool<'a>),
    members: Vec<AgentSlots>,
}

/// What a parallel application that found no room looked under: until one of these
/// changes, the agents keeping slots for no other reservation can only have become fewer,
/// so it finds no room again and is not retried (a lease would otherwise pay a pass over
/// every agent for each waiting parallel application).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NoRoom {
    /// The agent set (`Queues::agent_generation`).
    agents: u64,
    /// Holds dropped so far (`Reservations::released`).
    released: u64,
    size: ParallelSize,
    /// The platform the lease plan placed it on.
    placed: Option<String>,
}

/// The slots a run of `size` would ask of an agent with `slots`, as its share is first
/// guessed (whole nodes: all of them; `procs`: at most the whole run).
fn share_of(size: ParallelSize, slots: u32) -> u32 {
    match size {
        ParallelSize::Nodes(_) => slots,
        ParallelSize::NodesOf { per_node, .. } => per_node.min(slots),
        ParallelSize::Procs(p) => p.min(slots),
    }
}

impl Queues {
    /// Reserves agents of one platform for parallel `app`'s next run; marks it
    /// unplaceable when no platform's agents could ever hold it, and notes it found no
    /// room when too few agents are free of other reservations now.
    pub(super) fn reserve_group(
        &mut self,
        app: AppId,
        size: ParallelSize,
        asking: AgentId,
        now_ms: u64,
    ) {
        let looked = NoRoom {
            agents: self.agent_generation,
            released: self.reservations.released,
            size,
            placed: self.parallel.get(&app).cloned(),
        };
        if self.reservations.no_room.get(&app) == Some(&looked) {
            return;
        }
        let no_request = ResourceRequest::default();
        let asking_platform = self.agents.get(&asking).map(|a| a.platform.clone());
        // Per pool: every agent that may hold it (for placeability), and the free ones.
        let mut pools: BTreeMap<Pool, PoolAgents> = BTreeMap::new();
        for agent in self.agents.values() {
            if !self.may_hold(agent.id, app) {
                continue;
            }
            let platform = agent.platform.as_str();
            let job = agent.batch_job_id.as_deref();
            let free = !self.reservations.holds.contains_key(&agent.id);
            // Its platform's pool, and its allocation's if a batch job started it.
            let its_pools =
                std::iter::once((platform, None)).chain(job.map(|j| (platform, Some(j))));
            for pool in its_pools {
                let entry = pools.entry(pool).or_default();
                entry.all.push((agent.id, agent.slots));
                if free {
                    entry.free.push((agent.id, agent.slots));
                }
            }
        }
        // When each free agent's share could start (`u64::MAX`: unknown), computed only
        // for pools whose free agents can hold the run (whether they can does not depend
        // on their order).
        let mut starts: HashMap<AgentId, u64> = HashMap::new();
        let mut placeable = false;
        let mut best: Option<Choice> = None;
        for (pool, PoolAgents { all, free }) in pools {
            let (platform, job) = pool;
            placeable |= job.is_none() && choose_members(size, &all).is_some();
            if choose_members(size, &free).is_none() {
                continue;
            }
            let mut turns: Vec<(Turn, u32)> = free
                .iter()
                .map(|&(id, slots)| {
                    let start = *starts.entry(id).or_insert_with(|| {
                        let need = Need {
                            cores: share_of(size, slots),
                            request: &no_request,
                        };
                        easy::shadow_ms(&self.load(id), need, now_ms).unwrap_or(u64::MAX)
                    });
                    ((start, id != asking, id), slots)
                })
                .collect();
            turns.sort_unstable();
            let order: Vec<AgentSlots> = turns.iter().map(|(k, s)| (k.2, *s)).collect();
            let Some(members) = choose_members(size, &order) else {
                continue;
            };
            let start = members
                .iter()
                .filter_map(|(a, _)| starts.get(a).copied())
                .max()
                .unwrap_or(u64::MAX);
            let key = (
                job.is_none(),
                start,
                asking_platform.as_deref() != Some(platform),
                pool,
            );
            if best.as_ref().is_none_or(|b| key < b.key) {
                best = Some(Choice { key, members });
            }
        }
        if !placeable {
            self.reservations
                .mark_unplaceable(app, self.agent_generation);
            return;
        }
        let Some(Choice {
            key: (_, start, _, _),
            members,
        }) = best
        else {
            self.reservations.no_room.insert(app, looked);
            return;
        };
        self.reservations.no_room.remove(&app);
        tracing::debug!(%app, members = members.len(), start, "reserved for a parallel task");
        for &(agent, cores) in &members {
            self.reservations.holds.insert(
                agent,
                Hold {
                    app,
                    cores,
                    request: ResourceRequest::default(),
                },
            );
        }
        self.reservations.by_app.insert(
            app,
            Reservation {
                agents: members.into_iter().map(|(a, _)| a).collect(),
                made_ms: now_ms,
                shadow_ms: (start != u64::MAX).then_some(start),
            },
        );
    }
}
