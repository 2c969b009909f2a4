//! One application's queue: its tasks' states and attempts, and the waiting order.

use hetpilot_protocol::protocol::{AppRuntime, StateCounts, TaskState};
use hetpilot_protocol::resources::ResourceRequest;
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::template::{TaskInput, Template};
use hetpilot_protocol::{AgentId, AppId};
use std::collections::{BTreeMap, VecDeque};

/// Task inputs, stored compactly.
#[derive(Debug, Clone)]
pub enum TaskInputs {
    /// One input line per task, by task index.
    Lines(Vec<Box<str>>),
    /// An integer range: task `i`'s input is `start + i`.
    Array {
        /// The first task's integer.
        start: u64,
    },
    /// One parameter set per task, by task index.
    Params(Vec<BTreeMap<String, String>>),
}

impl TaskInputs {
    pub(crate) fn input(&self, index: u64) -> TaskInput<'_> {
        match self {
            TaskInputs::Lines(l) => TaskInput::Line(&l[index as usize]),
            TaskInputs::Array { start } => TaskInput::Array(start + index),
            TaskInputs::Params(p) => TaskInput::Params(&p[index as usize]),
        }
    }

    /// The input as one string (exported to the task as `HETPILOT_INPUT`).
    pub(crate) fn input_string(&self, index: u64) -> String {
        match self.input(index) {
            TaskInput::Line(l) => l.to_string(),
            TaskInput::Array(v) => v.to_string(),
            TaskInput::Params(p) => serde_json::to_string(p).unwrap_or_default(),
        }
    }
}

/// The live state of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSlot {
    /// Where the task is in its life.
    pub state: TaskState,
    /// Leases so far (the current or last attempt number).
    pub attempt: u32,
    /// Of those, attempts lost to the infrastructure (agent lost, pilot killed, lease
    /// never delivered): they do not count against `max_attempts`.
    pub lost: u32,
    /// The agent of the current or last attempt; `None` before the first lease.
    pub agent: Option<AgentId>,
    /// The variant the current or last attempt runs as, by index in the application's
    /// variants (`None`: an application without variants, or never leased).
    pub variant: Option<u8>,
}

/// One application's queue: what its tasks run with, their states and the waiting order.
#[derive(Debug)]
pub struct AppEntry {
    /// The application.
    pub id: AppId,
    /// The user who submitted it.
    pub owner: String,
    /// How its tasks run, as sent to agents.
    pub runtime: AppRuntime,
    pub(crate) template: Template,
    /// Shared, so planners can render tasks' files without holding the queues.
    pub(crate) inputs: std::sync::Arc<TaskInputs>,
    pub(crate) max_attempts: u32,
    /// When it was submitted (unix ms).
    pub submitted_ms: u64,
    /// True once it was cancelled.
    pub cancelled: bool,
    /// When its last task ended, or it was cancelled (unix ms); `None` while it lives.
    pub ended_ms: Option<u64>,
    /// Tasks are leased from Het-HPS partitions (see `queue::partitions`).
    pub(crate) data_intensive: bool,
    pub(crate) tasks: Vec<TaskSlot>,
    pub(crate) waiting: VecDeque<u64>,
    /// Its tasks by state, kept up to date with every change.
    pub counts: StateCounts,
    /// Attempts of its tasks lost to the infrastructure (the sum of the tasks' `lost`),
    /// kept up to date with every change.
    pub lost_attempts: u64,
    /// A workflow's dependency state (`None`: independent tasks).
    pub dag: Option<super::dag::DagState>,
    /// What each task asks for besides cores and memory (a workflow task may ask for its
    /// own, see [`AppEntry::task_request`]).
    pub request: ResourceRequest,
    /// A parallel task's size (`nodes` / `procs`); `None`: each run on one agent.
    pub parallel: Option<hetpilot_protocol::parallel::ParallelSize>,
    /// The agents of each parallel run under way, by task index.
    pub(crate) groups: std::collections::HashMap<u64, super::group_lease::GroupLease>,
    /// The ways its tasks may run, in declaration order (empty: the one way `runtime`
    /// and `request` say).
    pub variants: Vec<super::variant_lease::LiveVariant>,
}

impl AppEntry {
    /// Task `index`'s array value (`start + index`), for an array application's task;
    /// `None` for other applications (their inputs are stored with the tasks).
    pub fn array_value(&self, index: u64) -> Option<u64> {
        match *self.inputs {
            TaskInputs::Array { start } if index < self.tasks.len() as u64 => {
                start.checked_add(index)
            }
            _ => None,
        }
    }
}

impl TaskSlot {
    /// Attempts that count against `max_attempts`: those that ended with a result.
    pub fn counted_attempts(&self) -> u32 {
        self.attempt.saturating_sub(self.lost)
    }
}

impl AppEntry {
    /// A new application with every task waiting; `template` is `spec.validate()`'s result.
    pub(crate) fn new(
        id: AppId,
        owner: String,
        mut spec: AppSpec,
        template: Template,
        now_ms: u64,
    ) -> Self {
        let n = spec.tasks.len();
        let dag = spec.dag.take();
        let runtime = runtime_of(id, &owner, &spec);
        // `spec.validate()` checked it; were it unfit anyway, the tasks ask for nothing.
        let request = spec.resource_request().unwrap_or_default();
        let parallel = hetpilot_protocol::parallel::size_of(&spec).ok().flatten();
        let data_intensive = spec.data_intensive;
        let variants = super::variant_lease::LiveVariant::of(&spec);
        let inputs = match spec.tasks {
            TaskSource::Lines(lines) => {
                TaskInputs::Lines(lines.into_iter().map(String::into_boxed_str).collect())
            }
            TaskSource::Array { start, .. } => TaskInputs::Array { start },
            TaskSource::Params(p) => TaskInputs::Params(p),
        };
        let slot = TaskSlot {
            state: TaskState::Waiting,
            attempt: 0,
            lost: 0,
            agent: None,
            variant: None,
        };
        let mut app = Self::assemble(
            id,
            owner,
            runtime,
            template,
            inputs,
            spec.max_attempts,
            data_intensive,
            now_ms,
            vec![slot; n as usize],
        );
        app.request = request;
        app.parallel = parallel;
        match variants {
            Ok(v) => app.set_variants(v),
            // `spec.validate()` parsed them; were one unfit anyway, nothing runs.
            Err(_) => app.cancelled = true,
        }
        // `spec.validate()` checked the DAG; were it unfit anyway, no task runs out of order.
        if app.attach_dag(dag).is_err() {
            app.cancelled = true;
        }
        app
    }

    /// An application loaded from the store, with its tasks' recorded states; an error
    /// says why a stored workflow does not fit its tasks.
    pub fn restore(
        id: AppId,
        owner: String,
        mut spec: AppSpec,
        template: Template,
        inputs: TaskInputs,
        submitted_ms: u64,
        tasks: Vec<TaskSlot>,
    ) -> Result<Self, String> {
        let dag = spec.dag.take();
        let runtime = runtime_of(id, &owner, &spec);
        let mut app = Self::assemble(
            id,
            owner,
            runtime,
            template,
            inputs,
            spec.max_attempts,
            spec.data_intensive,
            submitted_ms,
            tasks,
        );
        app.request = spec
            .resource_request()
            .map_err(|e| format!("stored resource request: {e}"))?;
        app.parallel = hetpilot_protocol::parallel::size_of(&spec)
            .map_err(|e| format!("stored parallel size: {e}"))?;
        app.set_variants(
            super::variant_lease::LiveVariant::of(&spec)
                .map_err(|e| format!("stored variants: {e}"))?,
        );
        app.attach_dag(dag)?;
        Ok(app)
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        id: AppId,
        owner: String,
        runtime: AppRuntime,
        template: Template,
        inputs: TaskInputs,
        max_attempts: u32,
        data_intensive: bool,
        submitted_ms: u64,
        tasks: Vec<TaskSlot>,
    ) -> Self {
        let mut app = AppEntry {
            id,
            owner,
            runtime,
            template,
            inputs: std::sync::Arc::new(inputs),
            max_attempts,
            submitted_ms,
            cancelled: false,
            ended_ms: None,
            data_intensive,
            tasks,
            waiting: VecDeque::new(),
            counts: StateCounts::default(),
            lost_attempts: 0,
            dag: None,
            request: ResourceRequest::default(),
            parallel: None,
            groups: std::collections::HashMap::new(),
            variants: Vec::new(),
        };
        app.rebuild_index();
        app
    }

    /// Attaches a workflow's dependency state (from `spec.dag`), built from the tasks'
    /// current states; an error says why a stored workflow does not fit its tasks.
    fn attach_dag(&mut self, dag: Option<hetpilot_protocol::dag::DagSpec>) -> Result<(), String> {
        if let Some(dag) = dag {
            let state = super::dag::DagState::new(std::sync::Arc::new(dag), &self.tasks)?;
            self.dag = Some(state);
            self.waiting.clear();
        }
        Ok(())
    }

    /// A workflow's blocked and ready tasks and critical paths (`None`: not a workflow).
    pub fn workflow_progress(&self) -> Option<hetpilot_protocol::dag::WorkflowProgress> {
        let dag = self.dag.as_ref()?;
        let (critical_path_secs, remaining_path_secs) = dag.paths(&self.tasks);
        Some(hetpilot_protocol::dag::WorkflowProgress {
            blocked: dag.blocked(),
            ready: self.ready_count(),
            critical_path_secs,
            remaining_path_secs,
        })
    }

    /// Whether it has ended: every task is done, failed or cancelled, or it was cancelled.
    /// Nothing of an ended application runs again; it may be forgotten.
    pub fn has_ended(&self) -> bool {
        self.cancelled || self.counts.finished() == self.counts.total()
    }

    /// The state of task `index`, if it exists.
    pub fn task(&self, index: u64) -> Option<&TaskSlot> {
        self.tasks.get(usize::try_from(index).ok()?)
    }

    /// Every task's state, by index.
    pub fn task_slots(&self) -> &[TaskSlot] {
        &self.tasks
    }

    /// A task's name: its input string (a workflow's task id).
    pub fn task_name(&self, index: u64) -> String {
        self.inputs.input_string(index)
    }

    /// Waiting tasks that may be leased now (for a workflow: whose parents are all done).
    pub fn ready_count(&self) -> u64 {
        let blocked = self.dag.as_ref().map_or(0, |d| d.blocked());
        self.counts.waiting.saturating_sub(blocked)
    }

    /// Puts a waiting task back in line (a workflow task only once its parents are done).
    pub(crate) fn enqueue(&mut self, index: u64) {
        match &mut self.dag {
            Some(dag) if dag.is_ready(index) => dag.push_ready(index),
            Some(_) => {}
            None => self.waiting.push_back(index),
        }
    }

    /// The next task to lease to `agent`: a workflow's by bottom level, others in order.
    pub(crate) fn pop_waiting(&mut self, agent: AgentId) -> Option<u64> {
        if let Some(dag) = &mut self.dag {
            return dag.pop_ready(&self.tasks, agent);
        }
        while let Some(index) = self.waiting.pop_front() {
            if self.tasks[index as usize].state == TaskState::Waiting {
                return Some(index);
            }
        }
        None
    }

    /// The parallel size a reservation of this application is made for now: its own, or
    /// a workflow's first ready parallel task's (`None`: none now).
    pub fn parallel_size(&self) -> Option<hetpilot_protocol::parallel::ParallelSize> {
        self.parallel
            .or_else(|| self.dag.as_ref()?.peek_parallel_size(&self.tasks))
    }

    /// The runs a scheduling round places and pilot demand asks for whole: a parallel
    /// application's ready tasks at its size, or a workflow's ready parallel tasks, all
    /// at the size of the first (the one its reservation is made for); `None`: none now.
    pub fn parallel_runs(&self) -> Option<(hetpilot_protocol::parallel::ParallelSize, u64)> {
        if let Some(size) = self.parallel {
            return Some((size, self.ready_count()));
        }
        let dag = self.dag.as_ref()?;
        let size = dag.peek_parallel_size(&self.tasks)?;
        Some((size, dag.ready_parallel_count(&self.tasks)))
    }

    /// Whether a reservation of this application has a task to be made for: a ready
    /// parallel task for a workflow that has some, else any ready task.
    pub(crate) fn reservation_ready(&self) -> bool {
        match &self.dag {
            Some(dag) if dag.has_parallel() => dag.peek_parallel_size(&self.tasks).is_some(),
            _ => self.ready_count() > 0,
        }
    }

    /// Takes the task a group lease starts: a workflow's first ready parallel task, else
    /// the next waiting one.
    pub(crate) fn pop_for_group(&mut self, agent: AgentId) -> Option<u64> {
        match &mut self.dag {
            Some(dag) => dag.pop_ready_parallel(&self.tasks),
            None => self.pop_waiting(agent),
        }
    }

    /// The cores the current or last lease of task `index` takes: a workflow task's own
    /// (its allocation if moldable), else the application's.
    pub fn held_cores(&self, index: u64) -> u32 {
        if let Some(v) = self.task_variant(index) {
            return v.cores;
        }
        if let Some(g) = self.groups.get(&index) {
            // The head's share of a parallel run.
            return g.members[0].slots;
        }
        if self.parallel.is_some() {
            return 1;
        }
        match &self.dag {
            Some(dag) => dag.held_cores(index, self.runtime.cores),
            None => self.runtime.cores,
        }
    }

    /// What a run of task `index` asks for besides cores and memory: a workflow task's own
    /// request over the application's, else the application's.
    pub fn task_request(&self, index: u64) -> ResourceRequest {
        if let Some(v) = self.task_variant(index) {
            return v.request.clone();
        }
        match self
            .dag
            .as_ref()
            .and_then(|d| d.spec.tasks.get(index as usize))
        {
            Some(t) => t.resource_request(&self.request),
            None => self.request.clone(),
        }
    }

    /// Empties the queue (the application was cancelled).
    pub(crate) fn clear_queue(&mut self) {
        self.waiting.clear();
        if let Some(dag) = &mut self.dag {
            dag.clear();
        }
    }

    /// After `index` ended as `state`: a workflow's children become ready (done) or its
    /// waiting descendants are cancelled (failed); returns the tasks cancelled.
    pub(crate) fn settle(&mut self, index: u64, state: TaskState) -> Vec<u64> {
        let Some(dag) = &mut self.dag else {
            return Vec::new();
        };
        match state {
            TaskState::Done => {
                for c in dag.parent_done(index, &self.tasks) {
                    dag.push_ready(c);
                }
                Vec::new()
            }
            TaskState::Failed => {
                let doomed = dag.doomed_descendants(index, &self.tasks);
                for &d in &doomed {
                    self.set_state(d, TaskState::Cancelled);
                }
                doomed
            }
            _ => Vec::new(),
        }
    }

    /// A workflow task's own files, as its assignment carries them.
    pub(crate) fn task_files(&self, index: u64) -> Option<hetpilot_protocol::files::FileTemplates> {
        let t = &self.dag.as_ref()?.spec.tasks[index as usize];
        if t.inputs.is_empty() && t.outputs.is_empty() {
            return None;
        }
        Some(hetpilot_protocol::files::FileTemplates::literal(
            &self.owner,
            &t.inputs,
            &t.outputs,
        ))
    }

    /// The stores task `index` reads or writes on: those of the application's declarations
    /// and, for a workflow task, those its own files name (what its agent needs grants for).
    pub fn task_stores(&self, index: u64) -> std::collections::BTreeSet<String> {
        let mut stores = self
            .runtime
            .files
            .as_ref()
            .map(|f| f.stores())
            .unwrap_or_default();
        if let Some(t) = self
            .dag
            .as_ref()
            .and_then(|d| d.spec.tasks.get(index as usize))
        {
            stores.extend(t.stores());
        }
        stores
    }

    /// The argv of task `index`: a workflow task's own command, else the template's.
    pub(crate) fn argv(&self, index: u64) -> Vec<String> {
        if let Some(v) = self.task_variant(index) {
            return v.template.render(index, self.inputs.input(index));
        }
        let own = self
            .dag
            .as_ref()
            .and_then(|d| d.spec.tasks[index as usize].argv.clone());
        own.unwrap_or_else(|| self.template.render(index, self.inputs.input(index)))
    }

    /// Moves a task to `state`, keeping the counts right.
    pub(crate) fn set_state(&mut self, index: u64, state: TaskState) {
        let slot = &mut self.tasks[index as usize];
        *self.counts.get_mut(slot.state) -= 1;
        *self.counts.get_mut(state) += 1;
        slot.state = state;
    }

    /// Rebuilds counts and the waiting queue from the task slots (after loading).
    pub(crate) fn rebuild_index(&mut self) {
        self.counts = StateCounts::default();
        self.lost_attempts = 0;
        self.waiting.clear();
        for (i, slot) in self.tasks.iter().enumerate() {
            *self.counts.get_mut(slot.state) += 1;
            self.lost_attempts = self.lost_attempts.saturating_add(u64::from(slot.lost));
            if slot.state == TaskState::Waiting && self.dag.is_none() {
                self.waiting.push_back(i as u64);
            }
        }
        if let Some(dag) = &mut self.dag {
            dag.rebuild(&self.tasks);
        }
    }
}

fn runtime_of(id: AppId, owner: &str, spec: &AppSpec) -> AppRuntime {
    AppRuntime {
        app: id,
        name: spec.name.clone(),
        cores: spec.cores,
        env: spec.env.clone(),
        workdir: spec.workdir.clone(),
        output_dir: spec.output_dir.clone(),
        timeout_secs: spec.timeout_secs,
        files: spec.file_templates().map(|f| f.owned_by(owner)),
    }
}
