//! WfCommons WfFormat instances (JSON), schema versions 1.4 to 1.6.
//!
//! 1.4 is flat: `workflow.tasks[]` with `name`, `id`, `parents`, `files[]{name, sizeInBytes,
//! link}`, `runtimeInSeconds`, `cores`, `command`. 1.5 and 1.6 split it:
//! `workflow.specification.tasks[]{id, parents, children, inputFiles, outputFiles}`,
//! `workflow.specification.files[]{id, sizeInBytes}`, and
//! `workflow.execution.tasks[]{id, runtimeInSeconds, coreCount, command}`. Edges are
//! `parents` ∪ the reverse of `children`. Unknown fields are ignored.

use super::{WfFile, WfTask, Workflow};
use anyhow::{bail, Context};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The schema versions read.
const VERSIONS: [&str; 3] = ["1.4", "1.5", "1.6"];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Instance {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    schema_version: Option<String>,
    workflow: Value,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Command {
    #[serde(default)]
    program: Option<String>,
    #[serde(default)]
    arguments: Vec<Value>,
}

/// Parses a WfFormat instance.
pub fn parse(text: &str) -> anyhow::Result<Workflow> {
    let inst: Instance = serde_json::from_str(text).context("not a WfCommons instance")?;
    let version = inst.schema_version.unwrap_or_default();
    if !VERSIONS.contains(&version.as_str()) {
        bail!(
            "schemaVersion `{version}` is not supported (WfFormat {} are)",
            VERSIONS.join(", ")
        );
    }
    let name = inst.name.unwrap_or_else(|| "workflow".into());
    let (mut wf, children) = if version == "1.4" {
        (flat(&inst.workflow)?, Vec::new())
    } else {
        split(&inst.workflow)?
    };
    wf.name = name;
    add_children_as_parents(&mut wf, children)?;
    Ok(wf)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn argv_of(command: Option<&Value>) -> Option<Vec<String>> {
    let c: Command = serde_json::from_value(command?.clone()).ok()?;
    let mut args: Vec<String> = c
        .arguments
        .iter()
        .map(|a| match a {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let program = c.program.filter(|p| !p.is_empty());
    match program {
        // Some recorders put the program itself first among the arguments.
        Some(p) if args.first().is_some_and(|a| a.ends_with(&p)) => Some(args),
        Some(p) => {
            args.insert(0, p);
            Some(args)
        }
        None => (!args.is_empty()).then_some(args),
    }
}

/// 1.5 / 1.6: specification and execution; also the `(child, parent)` pairs of the
/// `children` lists.
fn split(workflow: &Value) -> anyhow::Result<(Workflow, Vec<(String, String)>)> {
    let spec = workflow
        .get("specification")
        .context("workflow.specification is missing")?;
    let tasks = spec
        .get("tasks")
        .and_then(Value::as_array)
        .context("workflow.specification.tasks is missing")?;
    let sizes: HashMap<String, u64> = spec
        .get("files")
        .and_then(Value::as_array)
        .map(|files| {
            files
                .iter()
                .filter_map(|f| {
                    Some((
                        f.get("id")?.as_str()?.to_string(),
                        f.get("sizeInBytes")?.as_u64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let execution: HashMap<String, &Value> = workflow
        .pointer("/execution/tasks")
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .filter_map(|t| Some((t.get("id")?.as_str()?.to_string(), t)))
                .collect()
        })
        .unwrap_or_default();
    let file = |id: String| WfFile {
        size: sizes.get(&id).copied(),
        name: id,
    };
    let mut out = Vec::with_capacity(tasks.len());
    let mut children = Vec::new();
    for (k, t) in tasks.iter().enumerate() {
        let id = t
            .get("id")
            .or_else(|| t.get("name"))
            .and_then(Value::as_str)
            .with_context(|| format!("specification task #{k} has no id"))?
            .to_string();
        for c in strings(t.get("children")) {
            children.push((c, id.clone()));
        }
        let run = execution.get(&id);
        out.push(WfTask {
            parents: strings(t.get("parents")),
            inputs: strings(t.get("inputFiles")).into_iter().map(file).collect(),
            outputs: strings(t.get("outputFiles"))
                .into_iter()
                .map(file)
                .collect(),
            runtime_secs: run.and_then(|r| r.get("runtimeInSeconds")?.as_f64()),
            cores: run.and_then(|r| r.get("coreCount")?.as_f64()),
            argv: run.and_then(|r| argv_of(r.get("command"))),
            id,
            ..WfTask::default()
        });
    }
    let wf = Workflow {
        tasks: out,
        makespan_secs: workflow
            .pointer("/execution/makespanInSeconds")
            .and_then(Value::as_f64),
        ..Workflow::default()
    };
    Ok((wf, children))
}

/// 1.4: one flat task list with `files[].link`.
fn flat(workflow: &Value) -> anyhow::Result<Workflow> {
    let tasks = workflow
        .get("tasks")
        .and_then(Value::as_array)
        .context("workflow.tasks is missing")?;
    let mut out = Vec::with_capacity(tasks.len());
    for (k, t) in tasks.iter().enumerate() {
        let id = t
            .get("id")
            .or_else(|| t.get("name"))
            .and_then(Value::as_str)
            .with_context(|| format!("task #{k} has no id or name"))?
            .to_string();
        let mut task = WfTask {
            parents: strings(t.get("parents")),
            runtime_secs: t.get("runtimeInSeconds").and_then(Value::as_f64),
            cores: t.get("cores").and_then(Value::as_f64),
            argv: argv_of(t.get("command")),
            id,
            ..WfTask::default()
        };
        for f in t
            .get("files")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = f.get("name").and_then(Value::as_str) else {
                continue;
            };
            let file = WfFile {
                name: name.to_string(),
                size: f.get("sizeInBytes").and_then(Value::as_u64),
            };
            match f.get("link").and_then(Value::as_str) {
                Some("output") => task.outputs.push(file),
                _ => task.inputs.push(file),
            }
        }
        out.push(task);
    }
    Ok(Workflow {
        tasks: out,
        makespan_secs: workflow.get("makespanInSeconds").and_then(Value::as_f64),
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
