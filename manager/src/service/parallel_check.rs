//! Parallel tasks at the edge: a task asking for more nodes or processors than any
//! platform could ever hold at once (its profile's pilots and nodes, or the agents
//! registered on it now, whichever is larger) is refused at submission with a 400 that
//! names the field and says what each platform offers.

use super::{Manager, ServiceError};
use crate::queue::AgentState;
use hetpilot_protocol::parallel::{size_of, ParallelSize};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use std::collections::BTreeMap;

/// What one platform can hold at once: agents, and slots on all of them.
#[derive(Debug, Default, Clone, Copy)]
struct Room {
    agents: u64,
    slots: u64,
    /// The most slots one agent has.
    widest: u64,
}

impl Room {
    fn fits(self, size: ParallelSize) -> bool {
        match size {
            ParallelSize::Nodes(n) => u64::from(n) <= self.agents,
            ParallelSize::Procs(p) => u64::from(p) <= self.slots,
            ParallelSize::NodesOf { nodes, per_node } => {
                u64::from(nodes) <= self.agents && u64::from(per_node) <= self.widest
            }
        }
    }

    fn larger(self, other: Room) -> Room {
        Room {
            agents: self.agents.max(other.agents),
            slots: self.slots.max(other.slots),
            widest: self.widest.max(other.widest),
        }
    }
}

impl Manager {
    /// Refuses a parallel task (the application's, or a workflow's) no known platform
    /// could ever hold; accepts any while no platform is known (no profile and no agent
    /// yet). `spec` was validated.
    pub(super) fn check_parallel(&self, spec: &AppSpec) -> Result<(), ServiceError> {
        let mut sizes: Vec<(String, ParallelSize)> = Vec::new();
        match size_of(spec) {
            Ok(Some(size)) => sizes.push((String::new(), size)),
            Ok(None) => {}
            Err(e) => return Err(ServiceError::BadRequest(e.to_string())),
        }
        if let (Some(dag), TaskSource::Lines(names)) = (&spec.dag, &spec.tasks) {
            for (t, name) in dag.tasks.iter().zip(names) {
                if let Some(size) = t.parallel_size() {
                    sizes.push((format!("task `{name}`: "), size));
                }
            }
        }
        if sizes.is_empty() {
            return Ok(());
        }
        let rooms = self.rooms();
        for (task, size) in sizes {
            if rooms.is_empty() || rooms.values().any(|r| r.fits(size)) {
                continue;
            }
            let field = match size {
                ParallelSize::Nodes(_) => "nodes",
                _ => "procs",
            };
            let offers: Vec<String> = rooms
                .iter()
                .map(|(name, r)| format!("{name}: {} nodes, {} slots", r.agents, r.slots))
                .collect();
            return Err(ServiceError::BadRequest(format!(
                "field `{field}`: {task}no platform can hold this parallel task at once ({})",
                offers.join("; ")
            )));
        }
        Ok(())
    }

    /// What each known platform can hold at once: its profile's pilots, or its agents
    /// registered now, whichever is larger.
    fn rooms(&self) -> BTreeMap<String, Room> {
        let mut rooms: BTreeMap<String, Room> = self
            .platform_state()
            .shapes
            .iter()
            .map(|(name, s)| {
                let agents = u64::from(s.max_running) * u64::from(s.nodes_per_pilot);
                let room = Room {
                    agents,
                    slots: agents * u64::from(s.profile_cores),
                    widest: u64::from(s.profile_cores),
                };
                (name.clone(), room)
            })
            .collect();
        let mut registered: BTreeMap<String, Room> = BTreeMap::new();
        {
            let control = self.control();
            for a in control.queues().agents() {
                if a.state != AgentState::Active {
                    continue;
                }
                let room = registered.entry(a.platform.clone()).or_default();
                room.agents += 1;
                room.slots += u64::from(a.slots);
                room.widest = room.widest.max(u64::from(a.slots));
            }
        }
        for (name, room) in registered {
            let entry = rooms.entry(name).or_default();
            *entry = entry.larger(room);
        }
        rooms
    }
}
