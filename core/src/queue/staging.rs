//! The queues' side of live Het-HPS staging: which data-intensive applications need a
//! new plan (none yet, or the agent set changed since), what the planner must know of
//! them, and installing the partitions it returns. The planning itself runs outside the
//! queues (`service::staging_plan`), never once per pull.

use super::app::TaskInputs;
use super::partitions::Partitions;
use super::queues::{AgentState, Queues};
use hetpilot_protocol::files::{FileTemplates, TaskFile};
use hetpilot_protocol::protocol::TaskState;
use hetpilot_protocol::{AgentId, AppId};
use std::collections::HashSet;
use std::sync::Arc;

/// What the planner needs to partition one application's waiting tasks.
#[derive(Debug)]
pub struct StagingRequest {
    pub(crate) app: AppId,
    /// The application's owner, whose files relative names refer to.
    pub owner: String,
    /// The agent set this request describes; a plan for an older one is not installed.
    pub(crate) generation: u64,
    /// The agents that take tasks, by id, with their platform.
    pub(crate) agents: Vec<(AgentId, String)>,
    /// The waiting tasks in queue order, with the files each reads.
    pub(crate) tasks: Vec<(u64, Vec<TaskFile>)>,
}

/// A plan that is due, as taken from the queues in a moment: rendering each waiting task's
/// files ([`StagingDue::render`]) happens later, without the queues' lock.
#[derive(Debug)]
pub struct StagingDue {
    /// The application.
    pub app: AppId,
    pub(crate) owner: String,
    /// The agent set the plan is for; a plan for an older one is not installed.
    pub generation: u64,
    pub(crate) agents: Vec<(AgentId, String)>,
    /// The waiting tasks in queue order.
    waiting: Vec<u64>,
    files: Option<FileTemplates>,
    inputs: Arc<TaskInputs>,
}

impl StagingDue {
    /// The request: every waiting task with the files it reads.
    pub fn render(self) -> StagingRequest {
        let tasks = self
            .waiting
            .iter()
            .map(|&t| {
                let inputs = self
                    .files
                    .as_ref()
                    .and_then(|f| f.for_task(t, &self.inputs.input_string(t)).ok())
                    .map(|f| f.inputs)
                    .unwrap_or_default();
                (t, inputs)
            })
            .collect();
        StagingRequest {
            app: self.app,
            owner: self.owner,
            generation: self.generation,
            agents: self.agents,
            tasks,
        }
    }
}

impl Queues {
    /// An agent stops taking tasks: its partitions go to the pools and plans are stale.
    pub(super) fn agent_left(&mut self, id: AgentId) {
        self.agent_generation += 1;
        self.reservations.agent_left(id);
        for p in self.partitions.values_mut() {
            p.release(id);
        }
    }

    /// The data-intensive applications with waiting tasks whose plan is missing or was
    /// made for another agent set (empty when there is no active agent).
    pub fn staging_due(&self) -> Vec<StagingDue> {
        let mut agents: Vec<(AgentId, String)> = self
            .agents
            .values()
            .filter(|a| a.state == AgentState::Active)
            .map(|a| (a.id, a.platform.clone()))
            .collect();
        if agents.is_empty() {
            return Vec::new();
        }
        agents.sort();
        let generation = self.agent_generation;
        self.apps
            .values()
            .filter(|a| a.data_intensive && !a.cancelled && a.counts.waiting > 0)
            .filter(|a| self.partitions.get(&a.id).map(|p| p.generation) != Some(generation))
            .map(|app| {
                let mut seen = HashSet::new();
                StagingDue {
                    app: app.id,
                    owner: app.owner.clone(),
                    generation,
                    agents: agents.clone(),
                    waiting: app
                        .waiting
                        .iter()
                        .copied()
                        .filter(|&t| app.tasks[t as usize].state == TaskState::Waiting)
                        .filter(|&t| seen.insert(t))
                        .collect(),
                    files: app.runtime.files.clone(),
                    inputs: app.inputs.clone(),
                }
            })
            .collect()
    }

    /// Installs a plan made for `partitions.generation`; returns false (and changes
    /// nothing) when the application was cancelled or forgotten, the agent set changed
    /// meanwhile or the plan is already in place.
    pub(crate) fn set_partitions(&mut self, app: AppId, partitions: Partitions) -> bool {
        // Made for an application cancelled or forgotten meanwhile: nothing to lease.
        if self.apps.get(&app).is_none_or(|a| a.cancelled) {
            return false;
        }
        let current = self.partitions.get(&app).map(|p| p.generation);
        if partitions.generation != self.agent_generation || current == Some(self.agent_generation)
        {
            return false;
        }
        self.partitions.insert(app, partitions);
        true
    }
}
