//! WfCommons WfFormat instances (JSON), schema versions 1.4 to 1.6.
//!
//! 1.4 is flat: `workflow.tasks[]` with `name`, `id`, `parents`, `files[]{name, sizeInBytes,
//! link}`, `runtimeInSeconds`, `cores`, `command`. 1.5 and 1.6 split it:
//! `workflow.specification.tasks[]{id, parents, children, inputFiles, outputFiles}`,
//! `workflow.specification.files[]{id, sizeInBytes}`, and
//! `workflow.execution.tasks[]{id, runtimeInSeconds, coreCount, command}`. Edges are
//! `parents` ∪ the reverse of `children`. Unknown fields are ignored, and one of an
//! unexpected type reads as absent (see [`lenient`]): the file streams into typed structs
//! that keep only what the workflow uses, and a task list is refused at its first task past
//! the most one workflow may have.

use super::lenient::{self, List, Object, Scalar, Strings};
use super::{WfFile, WfTask, Workflow};
use anyhow::{bail, Context};
use hetpilot_protocol::dag::MAX_DAG_TASKS;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::Read;

/// The schema versions read.
const VERSIONS: [&str; 3] = ["1.4", "1.5", "1.6"];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Instance {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    schema_version: Option<String>,
    workflow: Object<Section>,
}

/// `workflow`: 1.4's `tasks`, or 1.5's `specification` and `execution`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Section {
    /// 1.4's tasks (`None` in place of one without an id).
    #[serde(deserialize_with = "task_list")]
    tasks: Option<Vec<Option<WfTask>>>,
    makespan_in_seconds: Scalar,
    specification: Object<Specification>,
    execution: Object<Execution>,
}

/// 1.4: a task with its files.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct FlatTask {
    id: Scalar,
    name: Scalar,
    parents: Strings,
    runtime_in_seconds: Scalar,
    cores: Scalar,
    gpu_count: Scalar,
    #[serde(deserialize_with = "argv")]
    command: Option<Vec<String>>,
    files: List<Object<FlatFile>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct FlatFile {
    name: Scalar,
    size_in_bytes: Scalar,
    link: Scalar,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Specification {
    /// Each task with its `children` (`None` in place of one without an id); file sizes
    /// come later, from `files`.
    #[serde(deserialize_with = "spec_tasks")]
    tasks: Option<Vec<Option<SpecEntry>>>,
    /// Each file's size, by its id.
    #[serde(deserialize_with = "file_sizes")]
    files: Option<HashMap<String, u64>>,
}

/// A specification task as read, with the ids of its `children` list.
type SpecEntry = (WfTask, Vec<String>);

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SpecTask {
    id: Scalar,
    name: Scalar,
    parents: Strings,
    children: Strings,
    input_files: Strings,
    output_files: Strings,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SpecFile {
    id: Scalar,
    size_in_bytes: Scalar,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Execution {
    /// Each task's run, by its id (the last of one id).
    #[serde(deserialize_with = "runs")]
    tasks: Option<HashMap<String, Run>>,
    makespan_in_seconds: Scalar,
}

/// 1.5: what a task's run recorded.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Run {
    id: Scalar,
    runtime_in_seconds: Scalar,
    core_count: Scalar,
    gpu_count: Scalar,
    #[serde(deserialize_with = "argv")]
    command: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Command {
    program: Option<String>,
    arguments: Vec<Value>,
}

/// A list of tasks is refused past the most one workflow may have, as soon as it is reached.
const TOO_MANY_TASKS: &str = "tasks (the most one workflow may have)";

/// 1.4's tasks, each as the workflow's task as it streams in.
fn task_list<'de, D>(d: D) -> Result<Option<Vec<Option<WfTask>>>, D::Error>
where
    D: Deserializer<'de>,
{
    lenient::collect(
        d,
        MAX_DAG_TASKS,
        TOO_MANY_TASKS,
        |_, t: Object<FlatTask>| Ok(Some(flat_task(t.0.unwrap_or_default()))),
    )
}

/// A 1.4 task (`None`: it has no id). A task without an id is refused only once the schema
/// version says this list is the workflow's, so it is kept as `None` until then.
fn flat_task(t: FlatTask) -> Option<WfTask> {
    let mut task = WfTask {
        id: id_or_name(t.id, t.name)?,
        parents: t.parents.0,
        runtime_secs: t.runtime_in_seconds.as_f64(),
        cores: t.cores.as_f64(),
        gpus: t.gpu_count.as_f64(),
        argv: t.command,
        ..WfTask::default()
    };
    for f in t.files.into_vec().into_iter().filter_map(|f| f.0) {
        let Some(name) = f.name.into_string() else {
            continue;
        };
        let file = WfFile {
            name,
            size: f.size_in_bytes.as_u64(),
        };
        match f.link {
            Scalar::Str(l) if l == "output" => task.outputs.push(file),
            _ => task.inputs.push(file),
        }
    }
    Some(task)
}

/// 1.5's specification tasks, as tasks and their `children`, as they stream in.
fn spec_tasks<'de, D>(d: D) -> Result<Option<Vec<Option<SpecEntry>>>, D::Error>
where
    D: Deserializer<'de>,
{
    lenient::collect(
        d,
        MAX_DAG_TASKS,
        TOO_MANY_TASKS,
        |_, t: Object<SpecTask>| {
            let t = t.0.unwrap_or_default();
            let Some(id) = id_or_name(t.id, t.name) else {
                return Ok(Some(None));
            };
            let unsized_files = |ids: Strings| -> Vec<WfFile> {
                ids.0
                    .into_iter()
                    .map(|name| WfFile { name, size: None })
                    .collect()
            };
            let task = WfTask {
                id,
                parents: t.parents.0,
                inputs: unsized_files(t.input_files),
                outputs: unsized_files(t.output_files),
                ..WfTask::default()
            };
            Ok(Some(Some((task, t.children.0))))
        },
    )
}

/// The tasks, or an error naming the first without an id.
fn with_ids<T>(tasks: Vec<Option<T>>, missing: impl Fn(usize) -> String) -> anyhow::Result<Vec<T>> {
    if let Some(k) = tasks.iter().position(Option::is_none) {
        bail!(missing(k));
    }
    Ok(tasks.into_iter().flatten().collect())
}

/// 1.5's file sizes, by id (files without a string id or an integer size are left out).
fn file_sizes<'de, D>(d: D) -> Result<Option<HashMap<String, u64>>, D::Error>
where
    D: Deserializer<'de>,
{
    lenient::collect(d, usize::MAX, "files", |_, f: Object<SpecFile>| {
        Ok(f.0.and_then(|f| {
            let size = f.size_in_bytes.as_u64()?;
            Some((f.id.into_string()?, size))
        }))
    })
}

/// 1.5's runs, by task id (runs without a string id are left out).
fn runs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<HashMap<String, Run>>, D::Error> {
    let what = "execution tasks (the most one workflow may have)";
    lenient::collect(d, MAX_DAG_TASKS, what, |_, r: Object<Run>| {
        Ok(r.0.and_then(|mut r| Some((std::mem::take(&mut r.id).into_string()?, r))))
    })
}

/// Parses a WfFormat instance.
pub fn parse(text: &str) -> anyhow::Result<Workflow> {
    let inst: Instance = serde_json::from_str(text).context("not a WfCommons instance")?;
    from_instance(inst)
}

/// Reads a WfFormat instance as it streams in: only what the workflow keeps is held.
pub fn read(reader: impl Read) -> anyhow::Result<Workflow> {
    let inst: Instance = serde_json::from_reader(reader).context("not a WfCommons instance")?;
    from_instance(inst)
}

fn from_instance(inst: Instance) -> anyhow::Result<Workflow> {
    let version = inst.schema_version.unwrap_or_default();
    if !VERSIONS.contains(&version.as_str()) {
        bail!(
            "schemaVersion `{version}` is not supported (WfFormat {} are)",
            VERSIONS.join(", ")
        );
    }
    let name = inst.name.unwrap_or_else(|| "workflow".into());
    let section = inst.workflow.0.unwrap_or_default();
    let (mut wf, children) = if version == "1.4" {
        (flat(section)?, Vec::new())
    } else {
        split(section)?
    };
    wf.name = name;
    add_children_as_parents(&mut wf, children)?;
    Ok(wf)
}

/// The task's `id`, or its `name` when it has no `id`, if that is a string.
fn id_or_name(id: Scalar, name: Scalar) -> Option<String> {
    if id.is_present() { id } else { name }.into_string()
}

/// A recorded command as argv (`None` unless `program` is a string or absent and
/// `arguments` a list or absent); each argument not a string is its JSON text.
fn argv<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    // A command is small: it is read whole, then as a `Command` if it is one.
    let Ok(c) = Command::deserialize(Value::deserialize(d)?) else {
        return Ok(None);
    };
    let mut args: Vec<String> = c
        .arguments
        .into_iter()
        .map(|a| match a {
            Value::String(s) => s,
            other => other.to_string(),
        })
        .collect();
    let program = c.program.filter(|p| !p.is_empty());
    Ok(match program {
        // Some recorders put the program itself first among the arguments.
        Some(p) if args.first().is_some_and(|a| a.ends_with(&p)) => Some(args),
        Some(p) => {
            args.insert(0, p);
            Some(args)
        }
        None => (!args.is_empty()).then_some(args),
    })
}

/// 1.5 / 1.6: specification and execution; also the `(child, parent)` pairs of the
/// `children` lists.
fn split(section: Section) -> anyhow::Result<(Workflow, Vec<(String, String)>)> {
    let spec = section
        .specification
        .0
        .context("workflow.specification is missing (or not an object)")?;
    let tasks = spec
        .tasks
        .context("workflow.specification.tasks is missing")?;
    let mut tasks = with_ids(tasks, |k| format!("specification task #{k} has no id"))?;
    let sizes = spec.files.unwrap_or_default();
    let execution = section.execution.0.unwrap_or_default();
    let mut runs = execution.tasks.unwrap_or_default();
    let mut children = Vec::new();
    for (task, kids) in &mut tasks {
        children.extend(
            std::mem::take(kids)
                .into_iter()
                .map(|c| (c, task.id.clone())),
        );
        for f in task.inputs.iter_mut().chain(&mut task.outputs) {
            f.size = sizes.get(&f.name).copied();
        }
        if let Some(run) = runs.remove(&task.id) {
            task.runtime_secs = run.runtime_in_seconds.as_f64();
            task.cores = run.core_count.as_f64();
            task.gpus = run.gpu_count.as_f64();
            task.argv = run.command;
        }
    }
    let wf = Workflow {
        tasks: tasks.into_iter().map(|(task, _)| task).collect(),
        makespan_secs: execution.makespan_in_seconds.as_f64(),
        ..Workflow::default()
    };
    Ok((wf, children))
}

/// 1.4: one flat task list with `files[].link`.
fn flat(section: Section) -> anyhow::Result<Workflow> {
    let tasks = section.tasks.context("workflow.tasks is missing")?;
    Ok(Workflow {
        tasks: with_ids(tasks, |k| format!("task #{k} has no id or name"))?,
        makespan_secs: section.makespan_in_seconds.as_f64(),
        ..Workflow::default()
    })
}

/// Adds each `(child, parent)` link of the `children` lists the child's `parents` lacks.
fn add_children_as_parents(
    wf: &mut Workflow,
    children: Vec<(String, String)>,
) -> anyhow::Result<()> {
    let index: HashMap<String, usize> = wf
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.clone(), i))
        .collect();
    let mut have: HashSet<(usize, String)> = HashSet::new();
    for (i, t) in wf.tasks.iter().enumerate() {
        for p in &t.parents {
            have.insert((i, p.clone()));
        }
    }
    for (child, parent) in children {
        let &c = index.get(&child).with_context(|| {
            format!("task `{parent}`: child `{child}` is not a task of this workflow")
        })?;
        if have.insert((c, parent.clone())) {
            wf.tasks[c].parents.push(parent);
        }
    }
    Ok(())
}
