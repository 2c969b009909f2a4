//! What the platforms offer now, as the manager sees it: each profiled platform's shape as
//! its profile says and as its pilots' agents registered (the capacities the provisioning
//! round plans with, with a warning when the two differ), and why an application can run
//! nowhere (the `blocked` reason of its summary).

use super::Manager;
use crate::control::{Capacity, NodeResources, StagingProfile};
use crate::provision::profile::PlatformProfile;
use crate::queue::{AgentState, AppEntry, Queues};
use hetpilot_protocol::launcher::LaunchTemplate;
use hetpilot_protocol::pilots::PlatformStatus;
use hetpilot_protocol::protocol::Assignment;
use std::collections::BTreeMap;

/// A profiled platform as its profile describes it.
#[derive(Debug, Clone)]
pub struct Shape {
    pub staging: StagingProfile,
    pub max_running: u32,
    /// Nodes each pilot brings (one agent each).
    pub nodes_per_pilot: u32,
    pub profile_cores: u32,
    /// What each node offers besides cores, as the profile says.
    pub resources: NodeResources,
    /// What its parallel tasks start their ranks with.
    pub launcher: LaunchTemplate,
}

/// The newest active agent of `platform`'s slots: what its nodes really give a pilot.
fn registered_slots(queues: &Queues, platform: &str) -> Option<u32> {
    queues
        .agents()
        .filter(|a| a.platform == platform && a.state == AgentState::Active)
        .max_by_key(|a| (a.registered_ms, a.id))
        .map(|a| a.slots)
}

/// Whether a platform can take an application's tasks now, and if not why.
struct Offer {
    name: String,
    /// The most cores one of its nodes gives a task: its largest active agent, else (for
    /// an available profiled platform) what its pilots will bring.
    cores: Option<u32>,
    /// Why it has none: unavailable (with the provisioner's reason) or no agent.
    why_not: String,
}

/// What every configured platform offers now, from the platforms' statuses (the
/// provisioner's) and the live agents.
pub(super) struct Offers(Vec<Offer>);

impl Offers {
    /// Why no platform can run `app`'s waiting tasks, if none can; `None` for an
    /// application without waiting tasks.
    pub(super) fn blocked(&self, app: &AppEntry) -> Option<String> {
        if app.cancelled || app.counts.waiting == 0 {
            return None;
        }
        let cores = app.runtime.cores.max(1);
        if self.0.iter().any(|o| o.cores.is_some_and(|c| c >= cores)) {
            return None;
        }
        let reasons: Vec<String> = self
            .0
            .iter()
            .map(|o| match o.cores {
                Some(c) => format!(
                    "{}: nodes of {c} cores, the application needs {cores}",
                    o.name
                ),
                None => o.why_not.clone(),
            })
            .collect();
        Some(format!("no available platform: {}", reasons.join("; ")))
    }
}

impl Manager {
    /// Gives each parallel run in `tasks` (leased to an agent of `platform`) the launcher
    /// its head fills in: the platform profile's, else (agents started by hand on a
    /// platform without a profile) `mpiexec` with the host file.
    pub(super) fn add_launchers(&self, platform: Option<&str>, tasks: &mut [Assignment]) {
        if tasks.iter().all(|t| t.hosts.is_empty()) {
            return;
        }
        let launcher = platform
            .and_then(|p| {
                self.platform_state()
                    .shapes
                    .get(p)
                    .map(|s| s.launcher.clone())
            })
            .unwrap_or_else(LaunchTemplate::mpiexec);
        for t in tasks.iter_mut().filter(|t| !t.hosts.is_empty()) {
            t.launcher = Some(launcher.clone());
        }
    }

    /// Takes what the profiled platforms' profiles say: their staging numbers and how far
    /// the provisioner may grow them.
    pub fn use_profiles(&self, profiles: &[PlatformProfile]) {
        self.platform_state().resources =
            super::resource_check::PlatformResources::of_profiles(profiles);
        self.platform_state().shapes = profiles
            .iter()
            .map(|p| {
                let shape = Shape {
                    staging: p.staging,
                    max_running: p.max_running,
                    nodes_per_pilot: p.nodes_per_pilot,
                    profile_cores: p.cores_per_node,
                    resources: NodeResources {
                        gpus: p.gpus_per_node,
                        named: p.resources.clone(),
                    },
                    launcher: p.launcher.clone(),
                };
                (p.name.clone(), shape)
            })
            .collect();
        self.plan_capacities();
    }

    /// Gives the control plane each profiled platform's capacity: `max_running` pilots of
    /// `nodes_per_pilot` nodes each, nodes of
    /// the slots its newest active agent registered (the last ones seen, once its agents
    /// are gone), or (before any registered) its profile's `cores_per_node`. Warns once per
    /// change when the two differ.
    pub(super) fn plan_capacities(&self) {
        let shapes = self.platform_state().shapes.clone();
        let registered: BTreeMap<String, Option<u32>> = {
            let control = self.control();
            shapes
                .keys()
                .map(|name| (name.clone(), registered_slots(control.queues(), name)))
                .collect()
        };
        let mut changed = false;
        let mut capacities = BTreeMap::new();
        {
            let mut book = self.platform_state();
            for (name, shape) in &shapes {
                let cores = registered[name]
                    .or(book.planned_cores.get(name).copied())
                    .unwrap_or(shape.profile_cores);
                if book.planned_cores.insert(name.clone(), cores) != Some(cores) {
                    changed = true;
                    if cores != shape.profile_cores {
                        tracing::warn!(
                            platform = %name,
                            registered_slots = cores,
                            profile_cores_per_node = shape.profile_cores,
                            "the platform's agents register {cores} slots where its profile \
                             says cores_per_node = {}: pilots are planned with {cores}",
                            shape.profile_cores
                        );
                    }
                }
                let capacity = Capacity {
                    nodes: shape.max_running.saturating_mul(shape.nodes_per_pilot),
                    cores_per_node: cores,
                    resources: shape.resources.clone(),
                };
                capacities.insert(name.clone(), capacity);
            }
        }
        if changed || shapes.is_empty() {
            let staging = shapes
                .iter()
                .map(|(name, s)| (name.clone(), s.staging))
                .collect();
            self.control().use_profiles(staging, capacities);
        }
    }

    /// The cores a pilot of profiled `platform` brings, as planned by
    /// [`Self::plan_capacities`].
    pub(super) fn pilot_cores(&self, platform: &str) -> Option<u32> {
        self.platform_state().planned_cores.get(platform).copied()
    }

    /// What the platforms offer as the book knows it (copied, so no lock is held).
    pub(super) fn platform_book(&self) -> PlatformBook {
        let book = self.platform_state();
        PlatformBook {
            statuses: book.platforms.clone(),
            pilot_cores: book
                .shapes
                .iter()
                .map(|(name, shape)| {
                    let cores = book.planned_cores.get(name).copied();
                    (name.clone(), cores.unwrap_or(shape.profile_cores))
                })
                .collect(),
        }
    }

    /// What every configured platform offers now, from `book` and the live agents in
    /// `queues`.
    pub(super) fn offers(&self, book: &PlatformBook, queues: &Queues) -> Offers {
        let offers = self
            .settings
            .platforms
            .iter()
            .map(|p| {
                let agents = queues
                    .agents()
                    .filter(|a| a.platform == p.name && a.state == AgentState::Active)
                    .map(|a| a.slots)
                    .max();
                let status = book.statuses.get(&p.name);
                let down = status.filter(|s| !s.available);
                // A profiled platform that is not down gets pilots of its nodes' cores.
                let pilots = match (&p.profile, down) {
                    (Some(_), None) => book.pilot_cores.get(&p.name).copied(),
                    _ => None,
                };
                let cores = match (agents, pilots) {
                    (Some(a), Some(c)) => Some(a.max(c)),
                    (a, c) => a.or(c),
                };
                let why_not = match down {
                    Some(s) => format!("{} unavailable: {}", p.name, s.reason),
                    None => format!("{}: no agent registered", p.name),
                };
                Offer {
                    name: p.name.clone(),
                    cores,
                    why_not,
                }
            })
            .collect();
        Offers(offers)
    }
}

/// The book's part of what platforms offer: the provisioner's statuses and the cores a
/// pilot of each profiled platform brings.
pub(super) struct PlatformBook {
    statuses: BTreeMap<String, PlatformStatus>,
    pilot_cores: BTreeMap<String, u32>,
}
