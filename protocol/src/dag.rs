//! Workflow applications: tasks with parents (a DAG). An application with a [`DagSpec`]
//! has one task per input line (the line is the task's *name*, the workflow's task id);
//! the DAG adds, per task, its parents (task indices), optionally its own command (argv,
//! never run through a shell), its recorded runtime (the scheduler's weight) and its own
//! input and output files (literal names, no placeholders; on a `store://`, the agent that
//! holds the task gets a grant to the owner's files there, as for application-wide files).
//!
//! A task is leased only after all its parents succeeded; a task that fails for good
//! cancels its descendants. [`DagSpec::check`] refuses, before anything is stored, a DAG
//! with a cycle (printed), a parent that is not a task, duplicate names, a file produced by
//! two tasks, and anything past the bounds below.

use crate::files::{store_of, FileDecl, FileTemplates};
use crate::resources::{ResourceAmount, ResourceRequest, GPUS};
use crate::spec::SpecError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The most tasks one workflow may hold.
pub const MAX_DAG_TASKS: usize = 1_000_000;
/// The most edges (parent links) one workflow may hold.
pub const MAX_DAG_EDGES: usize = 20_000_000;
/// The longest task name, in bytes.
pub const MAX_TASK_NAME: usize = 256;
/// The most words of one task's own command.
pub const MAX_ARGV_WORDS: usize = 4096;
/// The longest word of one task's own command, in bytes.
pub const MAX_ARGV_WORD: usize = 65_536;
/// The most files (inputs plus outputs) one task may declare.
pub const MAX_TASK_FILES: usize = 100_000;
/// The largest recorded runtime, seconds (about 31 years).
pub const MAX_RUNTIME_SECS: f64 = 1e9;

/// The dependencies (and per-task commands and files) of a workflow application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DagSpec {
    /// One entry per task, in task-index order (task `i` is the application's line `i`).
    pub tasks: Vec<DagTask>,
}

impl Eq for DagSpec {}

/// One task of a workflow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DagTask {
    /// The indices of the tasks that must succeed before this one may start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<u32>,
    /// The task's own command, already split into words; `None`: the application's
    /// command template, rendered for this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// The task's recorded (or expected) runtime in seconds: its weight in bottom levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_secs: Option<f64>,
    /// Files the task reads (literal names or URIs, as in the application's `inputs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<FileDecl>,
    /// Files the task writes (as in the application's `outputs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<FileDecl>,
    /// Cores the task reserves (its least, if moldable); `None`: the application's `cores`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// A moldable task's most cores: the scheduler gives it its HCPA allocation within
    /// `cores..=max_cores` (exported to the task as `HETPILOT_CORES`); `None`: rigid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cores: Option<u32>,
    /// A moldable task's Amdahl serial fraction `α` in `T(v, p) = T(v, 1) · (α + (1 − α)
    /// / p)`; `None`: [`DEFAULT_SERIAL_FRACTION`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_fraction: Option<f64>,
    /// The task's own GPUs (whole devices or a share of one); `None`: the application's.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::resource_fields::de_gpus"
    )]
    pub gpus: Option<ResourceAmount>,
    /// The task's own named counts, each replacing the application's of that name.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::resource_fields::de_named"
    )]
    pub resources: BTreeMap<String, ResourceAmount>,
    /// A parallel task's whole nodes, as an application's `nodes` (u64: a value out of
    /// range gets a message naming the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    /// A parallel task's processors, as an application's `procs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procs: Option<u64>,
}

/// The most cores one workflow task may reserve.
pub const MAX_TASK_CORES: u32 = 4096;
/// A moldable task's serial fraction when it declares none (the middle of the paper's
/// uniform `[0, 0.25]`, §5.1.2).
pub const DEFAULT_SERIAL_FRACTION: f64 = 0.125;

impl DagTask {
    /// The cores a lease of this task reserves at least (`app_cores` when it says none).
    pub fn least_cores(&self, app_cores: u32) -> u32 {
        self.cores.unwrap_or(app_cores).max(1)
    }

    /// The most cores it may be given (its least, unless moldable).
    pub fn most_cores(&self, app_cores: u32) -> u32 {
        let least = self.least_cores(app_cores);
        self.max_cores.map_or(least, |m| m.max(least))
    }

    /// The parallel size this task asks for (`None`: a run on one agent), as checked at
    /// submission.
    pub fn parallel_size(&self) -> Option<crate::parallel::ParallelSize> {
        crate::parallel::size_from(self.nodes, self.procs)
            .ok()
            .flatten()
    }

    /// What a run of this task asks for besides cores and memory: the application's
    /// request `app`, with the task's own `gpus` and named counts in place of the
    /// application's of the same name.
    pub fn resource_request(&self, app: &ResourceRequest) -> ResourceRequest {
        if self.gpus.is_none() && self.resources.is_empty() {
            return app.clone();
        }
        let mut request = app.clone();
        request.0.extend(self.resources.clone());
        if let Some(g) = self.gpus {
            request.0.insert(GPUS.to_string(), g);
        }
        request
    }
}

fn field(field: &'static str, problem: String) -> SpecError {
    SpecError::Field { field, problem }
}

impl DagTask {
    /// The stores (`store://NAME/...`) this task's own files name: the manager grants its
    /// agent access to the owner's files there while it holds the task.
    pub fn stores(&self) -> BTreeSet<String> {
        self.inputs
            .iter()
            .chain(&self.outputs)
            .filter_map(|d| store_of(&d.uri))
            .map(str::to_string)
            .collect()
    }
}

impl DagSpec {
    /// Every store some task's own files name (checked against the manager's `[[storage]]`
    /// at submit).
    pub fn stores(&self) -> BTreeSet<String> {
        self.tasks.iter().flat_map(DagTask::stores).collect()
    }

    /// Checks the DAG against the application's task names (its input lines).
    pub fn check(&self, names: &[String]) -> Result<(), SpecError> {
        if self.tasks.len() != names.len() {
            return Err(field(
                "dag",
                format!(
                    "{} dependency entries for {} tasks",
                    self.tasks.len(),
                    names.len()
                ),
            ));
        }
        if names.len() > MAX_DAG_TASKS {
            return Err(field(
                "tasks",
                format!(
                    "{} tasks is more than the limit of {MAX_DAG_TASKS} for a workflow",
                    names.len()
                ),
            ));
        }
        check_names(names)?;
        let mut edges = 0usize;
        for (i, t) in self.tasks.iter().enumerate() {
            edges = edges.saturating_add(t.parents.len());
            if edges > MAX_DAG_EDGES {
                return Err(field(
                    "after",
                    format!("more than {MAX_DAG_EDGES} dependencies"),
                ));
            }
            check_task(i, t, names)?;
            check_cores(t, &names[i])?;
            check_parallel(t, &names[i])?;
            crate::resource_fields::request_of(
                t.gpus,
                &t.resources,
                &format!("task `{}`: ", names[i]),
            )?;
        }
        check_producers(self, names)?;
        match find_cycle(self) {
            None => Ok(()),
            Some(cycle) => {
                let mut path: Vec<&str> = cycle.iter().map(|&v| names[v].as_str()).collect();
                path.push(path[0]);
                Err(field(
                    "after",
                    format!("the dependencies have a cycle: {}", path.join(" -> ")),
                ))
            }
        }
    }

    /// The children of every task (the reverse of `parents`, duplicates merged).
    pub fn children(&self) -> Vec<Vec<u32>> {
        let mut children = vec![Vec::new(); self.tasks.len()];
        for (i, t) in self.tasks.iter().enumerate() {
            for &p in &t.parents {
                if let Some(c) = children.get_mut(p as usize) {
                    if c.last() != Some(&(i as u32)) {
                        c.push(i as u32);
                    }
                }
            }
        }
        children
    }
}

fn check_names(names: &[String]) -> Result<(), SpecError> {
    let mut seen: HashSet<&str> = HashSet::with_capacity(names.len());
    for name in names {
        if name.is_empty() || name.len() > MAX_TASK_NAME || name.chars().any(char::is_control) {
            return Err(field(
                "id",
                format!(
                    "task name `{}` must be 1-{MAX_TASK_NAME} bytes without control characters",
                    name.escape_debug()
                ),
            ));
        }
        if !seen.insert(name) {
            return Err(field("id", format!("two tasks are named `{name}`")));
        }
    }
    Ok(())
}

fn check_task(i: usize, t: &DagTask, names: &[String]) -> Result<(), SpecError> {
    let name = &names[i];
    for &p in &t.parents {
        if p as usize >= names.len() {
            return Err(field(
                "after",
                format!("task `{name}`: parent #{p} is not a task of this workflow"),
            ));
        }
        if p as usize == i {
            return Err(field("after", format!("task `{name}` depends on itself")));
        }
    }
    if let Some(argv) = &t.argv {
        let bad_word = argv
            .iter()
            .any(|w| w.len() > MAX_ARGV_WORD || w.contains('\0'));
        if argv.is_empty() || argv.len() > MAX_ARGV_WORDS || bad_word {
            return Err(field(
                "command",
                format!(
                    "task `{name}`: a command needs 1-{MAX_ARGV_WORDS} words of at most \
                     {MAX_ARGV_WORD} bytes, without NUL bytes"
                ),
            ));
        }
    }
    if let Some(r) = t.runtime_secs {
        if !(0.0..=MAX_RUNTIME_SECS).contains(&r) {
            return Err(field(
                "runtime",
                format!("task `{name}`: runtime {r} s is not in 0..={MAX_RUNTIME_SECS}"),
            ));
        }
    }
    if t.inputs.len() + t.outputs.len() > MAX_TASK_FILES {
        return Err(field(
            "inputs",
            format!("task `{name}` declares more than {MAX_TASK_FILES} files"),
        ));
    }
    if !(t.inputs.is_empty() && t.outputs.is_empty()) {
        // Rendered as the agent will: a name escaping its root is refused here.
        FileTemplates::literal("", &t.inputs, &t.outputs)
            .for_task(i as u64, name)
            .map_err(|(f, e)| field(f.name(), format!("task `{name}`: {e}")))?;
    }
    Ok(())
}

/// A task's cores within `1..=MAX_TASK_CORES`, its most not below its least, its serial
/// fraction within `[0, 1]`.
fn check_cores(t: &DagTask, name: &str) -> Result<(), SpecError> {
    for (what, c) in [("cores", t.cores), ("max_cores", t.max_cores)] {
        if let Some(c) = c.filter(|c| !(1..=MAX_TASK_CORES).contains(c)) {
            return Err(field(
                what,
                format!("task `{name}`: {c} cores is not in 1..={MAX_TASK_CORES}"),
            ));
        }
    }
    if let (Some(least), Some(most)) = (t.cores, t.max_cores) {
        if most < least {
            return Err(field(
                "max_cores",
                format!("task `{name}`: max_cores {most} is below its cores {least}"),
            ));
        }
    }
    if let Some(a) = t.serial_fraction.filter(|a| !(0.0..=1.0).contains(a)) {
        return Err(field(
            "serial_fraction",
            format!("task `{name}`: serial fraction {a} is not in 0..=1"),
        ));
    }
    Ok(())
}

/// A parallel task (`nodes` / `procs`): sizes in range and consistent, and nothing a
/// parallel run cannot take (more than one core a slot, moldability, GPUs, named counts).
fn check_parallel(t: &DagTask, name: &str) -> Result<(), SpecError> {
    let named = |e: SpecError| match e {
        SpecError::Field { field: f, problem } => field(f, format!("task `{name}`: {problem}")),
        other => other,
    };
    if crate::parallel::size_from(t.nodes, t.procs)
        .map_err(named)?
        .is_none()
    {
        return Ok(());
    }
    let refuse = |f: &'static str, what: &str| {
        Err(field(
            f,
            format!("task `{name}`: a parallel task (`nodes` or `procs`) cannot {what}"),
        ))
    };
    if t.cores.is_some_and(|c| c > 1) {
        return refuse(
            "cores",
            "ask for cores: its size is its `nodes` and `procs`",
        );
    }
    if t.max_cores.is_some() {
        return refuse("max_cores", "be moldable");
    }
    if t.gpus.is_some() {
        return refuse("gpus", "ask for GPUs yet");
    }
    if !t.resources.is_empty() {
        return refuse("resources", "ask for named resources yet");
    }
    Ok(())
}

/// Refuses an output name that two tasks produce (a child could read either).
fn check_producers(dag: &DagSpec, names: &[String]) -> Result<(), SpecError> {
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (i, t) in dag.tasks.iter().enumerate() {
        for out in &t.outputs {
            if let Some(&other) = producer.get(out.uri.as_str()) {
                if other != i {
                    return Err(field(
                        "outputs",
                        format!(
                            "file `{}` is produced by both `{}` and `{}`",
                            out.uri, names[other], names[i]
                        ),
                    ));
                }
            }
            producer.insert(&out.uri, i);
        }
    }
    Ok(())
}

/// One cycle of the parent links, as task indices in dependency order, if there is one.
pub fn find_cycle(dag: &DagSpec) -> Option<Vec<usize>> {
    let n = dag.tasks.len();
    let children = dag.children();
    let mut remaining: Vec<usize> = vec![0; n];
    for &k in children.iter().flatten() {
        remaining[k as usize] += 1;
    }
    let mut ready: Vec<usize> = (0..n).filter(|&v| remaining[v] == 0).collect();
    let mut done = 0usize;
    while let Some(v) = ready.pop() {
        done += 1;
        for &c in &children[v] {
            remaining[c as usize] -= 1;
            if remaining[c as usize] == 0 {
                ready.push(c as usize);
            }
        }
    }
    if done == n {
        return None;
    }
    // Every task left has a parent left: walk parents until one repeats.
    let start = (0..n).find(|&v| remaining[v] > 0)?;
    let mut order: HashMap<usize, usize> = HashMap::new();
    let mut path = Vec::new();
    let mut v = start;
    loop {
        if let Some(&at) = order.get(&v) {
            let mut cycle: Vec<usize> = path[at..].to_vec();
            cycle.reverse(); // parents walked backwards: print in dependency order
            return Some(cycle);
        }
        order.insert(v, path.len());
        path.push(v);
        v = dag.tasks[v]
            .parents
            .iter()
            .map(|&p| p as usize)
            .find(|&p| remaining[p] > 0)?;
    }
}

/// A workflow application's progress, in its status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkflowProgress {
    /// Waiting tasks with a parent not yet done.
    pub blocked: u64,
    /// Waiting tasks whose parents are all done.
    pub ready: u64,
    /// The workflow's critical path (longest chain of recorded runtimes), seconds: its
    /// makespan alone on unbounded processors, the stretch's denominator.
    pub critical_path_secs: f64,
    /// The longest chain of recorded runtimes through tasks not yet ended, seconds.
    pub remaining_path_secs: f64,
}

impl WorkflowProgress {
    /// The live stretch estimate at `elapsed_secs` after submission: (elapsed + the
    /// remaining critical path) / the critical path; 1 is as fast as the workflow can go.
    pub fn stretch_estimate(&self, elapsed_secs: f64) -> Option<f64> {
        (self.critical_path_secs > 0.0)
            .then(|| (elapsed_secs.max(0.0) + self.remaining_path_secs) / self.critical_path_secs)
    }
}

/// What a workflow task adds to its row in `hetpilot tasks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkflowTaskInfo {
    /// The workflow's task id.
    pub name: String,
    /// Its parents' names.
    pub parents: Vec<String>,
    /// Waiting for a parent to succeed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
    /// When its last run started (epoch ms, the agent's clock), once it ended.
    #[serde(default)]
    pub started_ms: Option<u64>,
    /// When its last run ended (epoch ms, the agent's clock).
    #[serde(default)]
    pub ended_ms: Option<u64>,
    /// Why it was cancelled, when an ancestor failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_because: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parallel_tasks_size_is_checked_naming_the_field_and_the_task() {
        let with = |edit: fn(&mut DagTask)| {
            let mut d = dag(&[&[], &[0]]);
            edit(&mut d.tasks[1]);
            d.check(&names(2)).map_err(|e| e.to_string())
        };
        assert!(with(|t| t.procs = Some(4)).is_ok());
        assert_eq!(
            dag(&[&[], &[0]]).tasks[1].parallel_size(),
            None,
            "a task without `nodes` or `procs` runs on one agent"
        );
        type Edit = fn(&mut DagTask);
        let cases: [(Edit, &str); 7] = [
            (
                |t| t.procs = Some(0),
                "field `procs`: task `t1`: must be at least 1",
            ),
            (
                |t| t.procs = Some(1 << 40),
                "field `procs`: task `t1`: 1099511627776 is more",
            ),
            (
                |t| t.nodes = Some(5000),
                "field `nodes`: task `t1`: 5000 is more",
            ),
            (
                |t| (t.nodes, t.procs) = (Some(3), Some(4)),
                "field `procs`: task `t1`: 4 processors do not split evenly over 3 nodes",
            ),
            (
                |t| (t.procs, t.cores) = (Some(4), Some(2)),
                "field `cores`: task `t1`",
            ),
            (
                |t| (t.procs, t.max_cores) = (Some(4), Some(8)),
                "field `max_cores`: task `t1`",
            ),
            (
                |t| (t.nodes, t.gpus) = (Some(2), Some(ResourceAmount::whole(1).unwrap())),
                "field `gpus`: task `t1`",
            ),
        ];
        for (edit, want) in cases {
            let err = with(edit).unwrap_err();
            assert!(err.contains(want), "{want}: {err}");
        }
    }

    fn dag(parents: &[&[u32]]) -> DagSpec {
        DagSpec {
            tasks: parents
                .iter()
                .map(|p| DagTask {
                    parents: p.to_vec(),
                    ..DagTask::default()
                })
                .collect(),
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("t{i}")).collect()
    }

    #[test]
    fn a_diamond_is_accepted_and_its_children_are_the_reverse_links() {
        let d = dag(&[&[], &[0], &[0], &[1, 2]]);
        d.check(&names(4)).unwrap();
        assert_eq!(d.children(), vec![vec![1, 2], vec![3], vec![3], vec![]]);
    }

    #[test]
    fn a_cycle_is_printed_in_dependency_order() {
        let d = dag(&[&[], &[0, 3], &[1], &[2]]);
        let err = d.check(&names(4)).unwrap_err().to_string();
        assert!(err.contains("cycle"), "{err}");
        // t1 -> t2 -> t3 -> t1 in some rotation.
        let cycle = find_cycle(&d).unwrap();
        assert_eq!(cycle.len(), 3);
        for w in cycle.windows(2) {
            assert!(d.tasks[w[1]].parents.contains(&(w[0] as u32)), "{cycle:?}");
        }
        assert!(err.contains("t1") && err.contains("t2") && err.contains("t3"));
        assert!(!err.contains("t0"), "{err}");
    }

    #[test]
    fn a_task_asks_for_its_own_resources_over_the_applications() {
        let amount = |x| ResourceAmount::parse(x).unwrap();
        let mut d = dag(&[&[], &[0]]);
        d.tasks[1].gpus = Some(amount(0.5));
        d.tasks[1].resources.insert("fpga".into(), amount(2.0));
        d.check(&names(2)).unwrap();
        let app = ResourceRequest(
            [
                ("gpus".to_string(), amount(1.0)),
                ("fpga".to_string(), amount(1.0)),
            ]
            .into(),
        );
        assert_eq!(d.tasks[0].resource_request(&app), app);
        let own = d.tasks[1].resource_request(&app);
        assert_eq!((own.gpus(), own.0["fpga"]), (amount(0.5), amount(2.0)));
        d.tasks[1].gpus = Some(amount(3.5));
        let err = d.check(&names(2)).unwrap_err().to_string();
        assert!(err.starts_with("field `gpus`: task `t1`:"), "{err}");
        d.tasks[1].gpus = None;
        d.tasks[1].resources.insert("gpus".into(), amount(1.0));
        let err = d.check(&names(2)).unwrap_err().to_string();
        assert!(err.starts_with("field `resources`: task `t1`:"), "{err}");
    }

    #[test]
    fn a_tasks_cores_are_bounded_and_its_range_ordered() {
        let with = |cores, max_cores, serial_fraction| {
            let mut d = dag(&[&[]]);
            d.tasks[0].cores = cores;
            d.tasks[0].max_cores = max_cores;
            d.tasks[0].serial_fraction = serial_fraction;
            d.check(&names(1)).map_err(|e| e.to_string())
        };
        assert!(with(Some(2), Some(8), Some(0.1)).is_ok());
        let err = with(Some(0), None, None).unwrap_err();
        assert!(err.contains("0 cores is not in 1..=4096"), "{err}");
        let err = with(None, Some(MAX_TASK_CORES + 1), None).unwrap_err();
        assert!(err.contains("max_cores"), "{err}");
        let err = with(Some(4), Some(2), None).unwrap_err();
        assert!(err.contains("max_cores 2 is below its cores 4"), "{err}");
        let err = with(None, Some(2), Some(f64::NAN)).unwrap_err();
        assert!(err.contains("serial fraction"), "{err}");
        let t = DagTask {
            cores: Some(2),
            max_cores: Some(6),
            ..DagTask::default()
        };
        assert_eq!((t.least_cores(4), t.most_cores(4)), (2, 6));
        assert_eq!(
            (
                DagTask::default().least_cores(3),
                DagTask::default().most_cores(3)
            ),
            (3, 3)
        );
    }

    #[test]
    fn bad_parents_names_and_producers_are_refused() {
        let err = dag(&[&[], &[7]]).check(&names(2)).unwrap_err();
        assert!(err.to_string().contains("parent #7"), "{err}");
        let err = dag(&[&[0]]).check(&names(1)).unwrap_err();
        assert!(err.to_string().contains("itself"), "{err}");
        let dup = vec!["a".to_string(), "a".to_string()];
        let err = dag(&[&[], &[]]).check(&dup).unwrap_err();
        assert!(err.to_string().contains("two tasks are named `a`"), "{err}");
        let mut d = dag(&[&[], &[]]);
        d.tasks[0].outputs = vec!["x.dat".into()];
        d.tasks[1].outputs = vec!["x.dat".into()];
        let err = d.check(&names(2)).unwrap_err().to_string();
        assert!(err.contains("produced by both `t0` and `t1`"), "{err}");
        let mut d = dag(&[&[]]);
        d.tasks[0].runtime_secs = Some(f64::NAN);
        assert!(d.check(&names(1)).is_err());
        d.tasks[0].runtime_secs = None;
        d.tasks[0].argv = Some(vec![]);
        assert!(d.check(&names(1)).is_err());
        assert!(dag(&[&[]]).check(&names(2)).is_err());
    }

    #[test]
    fn task_rows_carry_workflow_fields_flat_and_only_for_workflows() {
        use crate::protocol::{TaskInfo, TaskState};
        let row = |workflow| TaskInfo {
            task: crate::TaskRef {
                app: crate::AppId(1),
                index: 0,
            },
            state: TaskState::Waiting,
            attempts: 0,
            lost_attempts: 0,
            input: "a".into(),
            last: None,
            workflow,
        };
        let plain = serde_json::to_value(row(None)).unwrap();
        assert!(plain.get("name").is_none(), "{plain}");
        let back: TaskInfo = serde_json::from_value(plain).unwrap();
        assert!(back.workflow.is_none());
        let info = WorkflowTaskInfo {
            name: "a".into(),
            parents: vec!["p".into()],
            blocked: true,
            started_ms: None,
            ended_ms: None,
            cancelled_because: None,
        };
        let flat = serde_json::to_value(row(Some(info.clone()))).unwrap();
        assert_eq!(flat["name"], "a");
        assert_eq!(flat["parents"][0], "p");
        assert_eq!(flat["blocked"], true);
        assert!(flat["started_ms"].is_null());
        let back: TaskInfo = serde_json::from_value(flat).unwrap();
        assert_eq!(back.workflow, Some(info));
    }

    #[test]
    fn a_workflow_is_not_partitioned_and_declares_files_per_task() {
        let mut spec = crate::spec::AppSpec {
            name: "w".into(),
            command: "true".into(),
            tasks: crate::spec::TaskSource::Lines(names(2)),
            cores: 1,
            memory_mb: 0,
            env: Default::default(),
            workdir: None,
            max_attempts: 1,
            timeout_secs: None,
            output_dir: None,
            inputs: vec![],
            outputs: vec![],
            data_intensive: true,
            dag: Some(dag(&[&[], &[0]])),
            gpus: None,
            resources: Default::default(),
            nodes: None,
            procs: None,
        };
        let err = spec.validate().unwrap_err().to_string();
        assert!(err.starts_with("field `data_intensive`"), "{err}");
        spec.data_intensive = false;
        spec.outputs = vec!["x".into()];
        assert!(spec.validate().is_err());
        spec.outputs.clear();
        spec.validate().unwrap();
        spec.tasks = crate::spec::TaskSource::Array { start: 0, end: 1 };
        assert!(spec.validate().unwrap_err().to_string().contains("lines"));
        // A name escaping its root, in a task's own files, is refused at submit.
        spec.tasks = crate::spec::TaskSource::Lines(names(2));
        spec.dag.as_mut().unwrap().tasks[1].outputs = vec!["../../etc/x".into()];
        let err = spec.validate().unwrap_err().to_string();
        assert!(err.contains("task `t1`"), "{err}");
        // A task's own files may be on a store; its name must be one.
        spec.dag.as_mut().unwrap().tasks[1].outputs = vec!["store://lustre/x".into()];
        spec.dag.as_mut().unwrap().tasks[0].inputs = vec!["store://gpfs/db/a".into()];
        spec.validate().unwrap();
        let dag = spec.dag.as_ref().unwrap();
        assert_eq!(
            dag.stores(),
            BTreeSet::from(["gpfs".into(), "lustre".into()])
        );
        assert_eq!(dag.tasks[1].stores(), BTreeSet::from(["lustre".into()]));
        spec.dag.as_mut().unwrap().tasks[1].outputs = vec!["store://bad name/x".into()];
        assert!(spec.validate().is_err());
        spec.dag.as_mut().unwrap().tasks[1].outputs = vec!["store://lustre/../bob/x".into()];
        assert!(spec.validate().unwrap_err().to_string().contains("`..`"));
    }
}
