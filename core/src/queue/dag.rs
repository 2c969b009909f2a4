//! The dependency state of one workflow application: which tasks are blocked on parents,
//! which are ready (a heap by bottom level), and what a task's end releases or cancels.
//! Built from the stored spec and the tasks' states, so a restarted manager rebuilds it
//! from the database alone: nothing here is persisted of its own.
//!
//! Ready tasks leave highest bottom level first (`bl(v) = w(v) + max bl(child)`, with the
//! recorded runtime as `w`, the PTG module's [`Ptg::bottom_levels`] with one processor per
//! task): the classic list-scheduling priority, which also drains a DAG's critical path
//! first. Among the few ready tasks at the top, one whose parent ran on the asking agent
//! goes first, so a child tends to run where its parents' outputs sit in the node cache.
//!
//! Under a workflow policy ([`crate::ptg::live`]) the last round's [`WorkflowPlan`] keys
//! the heap instead: earliest planned start first (bottom level breaks ties), and a
//! moldable task is leased with its planned processors. Each task's model `T(v, p)` comes
//! from what it declares, refined by the runs measured so far ([`RuntimeRefinement`]).

use super::app::TaskSlot;
use crate::ptg::live::{task_model, RuntimeRefinement, WorkflowPlan};
use crate::ptg::{MoldableTask, Ptg};
use hetpilot_protocol::dag::{DagSpec, DEFAULT_SERIAL_FRACTION};
use hetpilot_protocol::parallel::ParallelSize;
use hetpilot_protocol::protocol::TaskState;
use hetpilot_protocol::AgentId;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::sync::Arc;

/// How many of the top ready tasks a lease looks at for one whose parents ran on the
/// asking agent.
const AFFINITY_LOOKAHEAD: usize = 8;

/// The weight of a task without a recorded runtime, seconds.
const DEFAULT_RUNTIME_SECS: f64 = 1.0;

#[derive(Debug, Clone, Copy)]
struct Ready {
    /// Larger first: minus the planned start under a plan, else the bottom level.
    key: f64,
    bottom_level: f64,
    index: u32,
}

impl PartialEq for Ready {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    /// Highest key first, then highest bottom level, then lowest index (deterministic).
    fn cmp(&self, other: &Self) -> Ordering {
        self.key
            .total_cmp(&other.key)
            .then(self.bottom_level.total_cmp(&other.bottom_level))
            .then(other.index.cmp(&self.index))
    }
}

/// The live dependency state of one workflow application.
#[derive(Debug)]
pub struct DagState {
    /// The workflow as submitted (parents, per-task commands and files).
    pub(crate) spec: Arc<DagSpec>,
    children: Vec<Vec<u32>>,
    /// Every task, parents before children.
    topological_order: Vec<u32>,
    /// Parents of each task not yet done.
    pending: Vec<u32>,
    bottom_levels: Vec<f64>,
    ready: BinaryHeap<Ready>,
    /// Waiting tasks with a parent not yet done.
    blocked: u64,
    /// Each task's model `T(v, p)` as declared (recorded runtime, cores, moldability).
    graph: Ptg,
    /// How the measured runs compare with the model.
    refinement: RuntimeRefinement,
    /// The last round's plan, if a workflow policy planned this workflow.
    plan: Option<Arc<WorkflowPlan>>,
    /// Cores of each task's current or last lease (0: never leased since loading).
    allocated: Vec<u32>,
    /// The most cores any task may take (declared ones; 1 when none declares any).
    widest: u32,
    /// Each parallel task's size (`nodes` / `procs`), by index.
    parallel: BTreeMap<u32, ParallelSize>,
    /// Ready parallel tasks, by index: leased only through a reservation, all agents at
    /// once (`queue::group_lease`), never by [`Self::pop_ready`].
    ready_parallel: BTreeSet<u32>,
}

impl DagState {
    /// The dependency state of `tasks` (their current states) under `spec`; an error
    /// names what is wrong with a spec that does not fit (a stored row, never input,
    /// which was checked at submit).
    pub fn new(spec: Arc<DagSpec>, tasks: &[TaskSlot]) -> Result<DagState, String> {
        let n = spec.tasks.len();
        if n != tasks.len() {
            return Err(format!("{n} dependency entries for {} tasks", tasks.len()));
        }
        let graph = Self::model(&spec)?;
        let bottom_levels = graph.bottom_levels(&vec![1; n]);
        let topological_order = graph
            .topological_order()
            .iter()
            .map(|&v| v as u32)
            .collect();
        let children = spec.children();
        let widest = spec
            .tasks
            .iter()
            .map(|t| t.most_cores(1))
            .max()
            .unwrap_or(1);
        let parallel = spec
            .tasks
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i as u32, t.parallel_size()?)))
            .collect();
        let mut dag = DagState {
            spec,
            children,
            topological_order,
            pending: vec![0; n],
            bottom_levels,
            ready: BinaryHeap::new(),
            blocked: 0,
            graph,
            refinement: RuntimeRefinement::default(),
            plan: None,
            allocated: vec![0; n],
            widest,
            parallel,
            ready_parallel: BTreeSet::new(),
        };
        dag.rebuild(tasks);
        Ok(dag)
    }

    /// The workflow as a PTG: each task's model `T(v, p)` from what it declares (its
    /// recorded runtime, its cores, whether it is moldable; see [`task_model`]) and its
    /// parents as edges. The simulator's view of a workflow is this very graph.
    pub fn model(spec: &DagSpec) -> Result<Ptg, String> {
        let weights: Vec<MoldableTask> = spec
            .tasks
            .iter()
            .map(|t| {
                let moldable = t
                    .max_cores
                    .is_some()
                    .then(|| t.serial_fraction.unwrap_or(DEFAULT_SERIAL_FRACTION));
                task_model(
                    t.runtime_secs,
                    DEFAULT_RUNTIME_SECS,
                    t.least_cores(1),
                    moldable,
                )
            })
            .collect();
        let edges: Vec<(usize, usize)> = spec
            .tasks
            .iter()
            .enumerate()
            .flat_map(|(i, t)| t.parents.iter().map(move |&p| (p as usize, i)))
            .collect();
        Ptg::new("workflow", weights, &edges).map_err(|e| e.to_string())
    }

    /// Recounts pending parents and refills the ready heap from the tasks' states.
    pub(crate) fn rebuild(&mut self, tasks: &[TaskSlot]) {
        self.ready.clear();
        self.ready_parallel.clear();
        self.blocked = 0;
        let spec = Arc::clone(&self.spec);
        for (i, t) in spec.tasks.iter().enumerate() {
            self.pending[i] = t
                .parents
                .iter()
                .filter(|&&p| tasks[p as usize].state != TaskState::Done)
                .count() as u32;
            if tasks[i].state == TaskState::Waiting {
                if self.pending[i] == 0 {
                    self.push_ready(i as u64);
                } else {
                    self.blocked += 1;
                }
            }
        }
    }

    /// Waiting tasks that still wait for a parent.
    pub fn blocked(&self) -> u64 {
        self.blocked
    }

    /// The critical path (the largest bottom level) and the longest chain through tasks
    /// not yet ended, seconds of recorded runtime.
    pub fn paths(&self, tasks: &[TaskSlot]) -> (f64, f64) {
        let mut all = 0.0f64;
        let mut left = 0.0f64;
        for (i, &bl) in self.bottom_levels.iter().enumerate() {
            all = all.max(bl);
            if !tasks[i].state.is_final() {
                left = left.max(bl);
            }
        }
        (all, left)
    }

    /// Whether every parent of `index` is done.
    pub fn is_ready(&self, index: u64) -> bool {
        self.pending[index as usize] == 0
    }

    /// The bottom level of `index`, seconds of recorded runtime.
    pub fn bottom_level(&self, index: u64) -> f64 {
        self.bottom_levels[index as usize]
    }

    /// The indices of the parents of `index`.
    pub fn parents(&self, index: u64) -> &[u32] {
        &self.spec.tasks[index as usize].parents
    }

    /// Queues a waiting task whose parents are all done (a parallel one apart, for its
    /// reservation).
    pub(crate) fn push_ready(&mut self, index: u64) {
        if self.parallel.contains_key(&(index as u32)) {
            self.ready_parallel.insert(index as u32);
            return;
        }
        let i = index as usize;
        let key = match &self.plan {
            Some(p) => -p.start[i],
            None => self.bottom_levels[i],
        };
        self.ready.push(Ready {
            key,
            bottom_level: self.bottom_levels[i],
            index: index as u32,
        });
    }

    /// Installs (or removes) the round's plan and reorders the ready tasks by it; a plan
    /// of another size is ignored.
    pub(crate) fn set_plan(&mut self, plan: Option<Arc<WorkflowPlan>>) {
        let n = self.pending.len();
        self.plan = plan.filter(|p| p.start.len() == n && p.processors.len() == n);
        let ready: Vec<Ready> = std::mem::take(&mut self.ready).into_vec();
        for r in ready {
            self.push_ready(u64::from(r.index));
        }
    }

    /// Whether some task is parallel (the workflow then takes part in reservations).
    pub fn has_parallel(&self) -> bool {
        !self.parallel.is_empty()
    }

    /// The size of the parallel task a reservation is made for now: the ready one of
    /// lowest index still waiting (entries whose task left `Waiting` are dropped).
    pub(crate) fn ready_parallel_size(&mut self, tasks: &[TaskSlot]) -> Option<ParallelSize> {
        while let Some(&i) = self.ready_parallel.first() {
            if tasks[i as usize].state == TaskState::Waiting {
                return self.parallel.get(&i).copied();
            }
            self.ready_parallel.pop_first();
        }
        None
    }

    /// The size of the first ready parallel task, without dropping stale entries.
    pub fn peek_parallel_size(&self, tasks: &[TaskSlot]) -> Option<ParallelSize> {
        self.ready_parallel
            .iter()
            .find(|&&i| tasks[i as usize].state == TaskState::Waiting)
            .and_then(|i| self.parallel.get(i).copied())
    }

    /// How many ready parallel tasks wait now (entries whose task left `Waiting` are not
    /// counted).
    pub fn ready_parallel_count(&self, tasks: &[TaskSlot]) -> u64 {
        self.ready_parallel
            .iter()
            .filter(|&&i| tasks[i as usize].state == TaskState::Waiting)
            .count() as u64
    }

    /// Takes the ready parallel task a reservation was made for (see
    /// [`Self::ready_parallel_size`]).
    pub(crate) fn pop_ready_parallel(&mut self, tasks: &[TaskSlot]) -> Option<u64> {
        self.ready_parallel_size(tasks)?;
        self.ready_parallel.pop_first().map(u64::from)
    }

    /// Whether a round's plan orders this workflow.
    pub fn planned(&self) -> bool {
        self.plan.is_some()
    }

    /// The planned start of the first ready task (dropping entries whose task left
    /// `Waiting`); `None` without a plan or a ready task.
    pub(crate) fn next_planned_start(&mut self, tasks: &[TaskSlot]) -> Option<f64> {
        let plan = self.plan.as_ref()?;
        while let Some(r) = self.ready.peek() {
            if tasks[r.index as usize].state == TaskState::Waiting {
                return Some(plan.start[r.index as usize]);
            }
            self.ready.pop();
        }
        None
    }

    /// The cores a lease of `index` takes when `free` are free: its declared least (the
    /// application's `app_cores` if none), a moldable task its planned processors within
    /// its range and `free`; 0 when its least does not fit. Remembered for its run.
    pub(crate) fn lease_cores(&mut self, index: u64, app_cores: u32, free: u32) -> u32 {
        let i = index as usize;
        let t = &self.spec.tasks[i];
        let (least, most) = (t.least_cores(app_cores), t.most_cores(app_cores));
        if least > free {
            return 0;
        }
        let want = self.plan.as_ref().map_or(least, |p| p.processors[i]);
        let cores = want.clamp(least, most).min(free).max(least);
        self.allocated[i] = cores;
        cores
    }

    /// The cores the current or last lease of `index` took (its declared least, or
    /// `app_cores`, when unknown).
    pub fn held_cores(&self, index: u64, app_cores: u32) -> u32 {
        match self.allocated[index as usize] {
            0 => self.spec.tasks[index as usize].least_cores(app_cores),
            c => c,
        }
    }

    /// A run of `index` succeeded in `secs` on the cores it was leased with: refines the
    /// model of the tasks still to run.
    pub(crate) fn record_run(&mut self, index: u64, app_cores: u32, secs: f64) {
        let i = index as usize;
        let recorded = self.spec.tasks[i].runtime_secs.is_some();
        let cores = self.held_cores(index, app_cores);
        self.refinement
            .record(&self.graph.tasks()[i], recorded, cores, secs);
    }

    /// What remains of the workflow for a round to plan: every task's refined model, the
    /// ended ones at zero cost; `None` if the workflow has ended.
    pub fn remaining_graph(&self, tasks: &[TaskSlot]) -> Option<Ptg> {
        if tasks.iter().all(|t| t.state.is_final()) {
            return None;
        }
        let weights = self
            .graph
            .tasks()
            .iter()
            .zip(tasks)
            .zip(&self.spec.tasks)
            .map(|((m, t), d)| {
                if t.state.is_final() {
                    MoldableTask::EMPTY
                } else {
                    self.refinement.refine(*m, d.runtime_secs.is_some())
                }
            })
            .collect();
        self.graph.reweighted(weights)
    }

    /// The most cores one of its tasks may take (its declared cores, a moldable task's
    /// most): what one ready task may ask of the first level.
    pub fn widest(&self) -> u32 {
        self.widest
    }

    /// How many tasks the workflow has.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether it has no task (never: a workflow has at least one).
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The next ready task for `agent`: the highest bottom level, unless one of the next
    /// few has a parent that ran on `agent`. Entries whose task left `Waiting` are skipped.
    pub(crate) fn pop_ready(&mut self, tasks: &[TaskSlot], agent: AgentId) -> Option<u64> {
        let mut looked: Vec<Ready> = Vec::new();
        let mut chosen = None;
        while looked.len() < AFFINITY_LOOKAHEAD {
            let Some(r) = self.ready.pop() else { break };
            if tasks[r.index as usize].state != TaskState::Waiting {
                continue;
            }
            let near = self.spec.tasks[r.index as usize]
                .parents
                .iter()
                .any(|&p| tasks[p as usize].agent == Some(agent));
            if near {
                chosen = Some(r.index);
                break;
            }
            looked.push(r);
        }
        let chosen = match chosen {
            Some(c) => Some(c),
            None if looked.is_empty() => None,
            None => Some(looked.remove(0).index),
        };
        self.ready.extend(looked);
        chosen.map(u64::from)
    }

    /// Forgets every ready task (the application was cancelled).
    pub(crate) fn clear(&mut self) {
        self.ready.clear();
        self.ready_parallel.clear();
        self.blocked = 0;
    }

    /// `index` succeeded: returns its children that became ready (all parents done) and
    /// are waiting; the caller queues them.
    pub(crate) fn parent_done(&mut self, index: u64, tasks: &[TaskSlot]) -> Vec<u64> {
        let mut released = Vec::new();
        for &c in &self.children[index as usize] {
            let p = &mut self.pending[c as usize];
            *p = p.saturating_sub(1);
            if *p == 0 && tasks[c as usize].state == TaskState::Waiting {
                self.blocked = self.blocked.saturating_sub(1);
                released.push(u64::from(c));
            }
        }
        released
    }

    /// `index` failed for good: every waiting descendant, to cancel (they can never run).
    pub(crate) fn doomed_descendants(&mut self, index: u64, tasks: &[TaskSlot]) -> Vec<u64> {
        let mut seen = vec![false; tasks.len()];
        let mut stack = vec![index as u32];
        let mut doomed = Vec::new();
        while let Some(v) = stack.pop() {
            for &c in &self.children[v as usize] {
                if std::mem::replace(&mut seen[c as usize], true) {
                    continue;
                }
                if tasks[c as usize].state == TaskState::Waiting {
                    doomed.push(u64::from(c));
                    if self.pending[c as usize] > 0 {
                        self.blocked = self.blocked.saturating_sub(1);
                    }
                }
                stack.push(c);
            }
        }
        doomed.sort_unstable();
        doomed
    }

    /// For every task, a failed ancestor if it has one (why a task of a live application
    /// was cancelled), in one pass over the graph.
    pub fn failed_ancestors(&self, tasks: &[TaskSlot]) -> Vec<Option<u32>> {
        let mut failed: Vec<Option<u32>> = vec![None; tasks.len()];
        for &v in &self.topological_order {
            let parents = &self.spec.tasks[v as usize].parents;
            failed[v as usize] = parents
                .iter()
                .find(|&&p| tasks[p as usize].state == TaskState::Failed)
                .copied()
                .or_else(|| parents.iter().find_map(|&p| failed[p as usize]));
        }
        failed
    }
}
