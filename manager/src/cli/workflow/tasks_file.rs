//! Application files that list their tasks as `[[task]]` tables (a workflow):
//!
//! ```toml
//! name = "pipeline"          # and any application setting: cores, max_attempts, env...
//! [[task]]
//! id = "split"
//! command = "split.sh data.txt"
//! outputs = ["parts.txt"]
//! [[task]]
//! id = "count"
//! command = "wc -l parts.txt"
//! after = ["split"]
//! inputs = ["parts.txt"]
//! runtime = "30s"            # optional: the scheduler's weight (bottom levels)
//! [[task]]
//! id = "simulate"
//! command = "sh -c '$HETPILOT_LAUNCH ./sim'"
//! after = ["count"]
//! procs = 8                  # optional: a parallel task (or `nodes`), as in application files
//! ```
//!
//! Files are names or URIs as in the application's `inputs`/`outputs`, used as given.

use super::{WfFile, WfTask, Workflow};
use crate::cli::app_file::{parse_duration_secs, parse_memory_mb};
use anyhow::{anyhow, Context};
use hetpilot_protocol::files::FileDecl;
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskTable {
    id: String,
    command: String,
    #[serde(default)]
    after: Vec<String>,
    cores: Option<u32>,
    /// A moldable task's most cores (its least is `cores`).
    max_cores: Option<u32>,
    /// A moldable task's Amdahl serial fraction.
    serial_fraction: Option<f64>,
    runtime: Option<String>,
    #[serde(default)]
    inputs: Vec<FileDecl>,
    #[serde(default)]
    outputs: Vec<FileDecl>,
    /// The task's own GPUs (whole devices or a share of one).
    gpus: Option<f64>,
    /// The task's own named counts (`resources = { fpga = 1 }`).
    #[serde(
        default,
        deserialize_with = "hetpilot_protocol::resource_fields::de_named"
    )]
    resources: BTreeMap<String, hetpilot_protocol::resources::ResourceAmount>,
    /// A parallel task's whole nodes.
    nodes: Option<u64>,
    /// A parallel task's processors.
    procs: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkflowFile {
    name: Option<String>,
    cores: Option<u32>,
    memory: Option<String>,
    max_attempts: Option<u32>,
    timeout: Option<String>,
    workdir: Option<String>,
    output_dir: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// GPUs each task needs unless it says its own.
    #[serde(
        default,
        deserialize_with = "hetpilot_protocol::resource_fields::de_gpus"
    )]
    gpus: Option<hetpilot_protocol::resources::ResourceAmount>,
    /// Named counts each task needs unless it says its own.
    #[serde(
        default,
        deserialize_with = "hetpilot_protocol::resource_fields::de_named"
    )]
    resources: BTreeMap<String, hetpilot_protocol::resources::ResourceAmount>,
    task: Vec<TaskTable>,
}

/// Whether an application file's text lists `[[task]]` tables.
pub fn is_workflow(text: &str) -> bool {
    toml::from_str::<toml::Table>(text).is_ok_and(|t| t.contains_key("task"))
}

/// Reads a workflow application file; errors name the file and the task.
pub fn parse(text: &str, path: &Path) -> anyhow::Result<Workflow> {
    let file: WorkflowFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
        match line {
            Some(l) => anyhow!("{}:{l}: {}", path.display(), e.message()),
            None => anyhow!("{}: {}", path.display(), e.message()),
        }
    })?;
    let mut tasks = Vec::with_capacity(file.task.len());
    let cores = file.cores.unwrap_or(1);
    for t in file.task {
        let argv = shell_words::split(&t.command)
            .map_err(|e| anyhow!("task `{}`: command: {e} (check the quotes)", t.id))?;
        let runtime_secs = t
            .runtime
            .as_deref()
            .map(parse_duration_secs)
            .transpose()
            .with_context(|| format!("task `{}`: runtime", t.id))?;
        let files = |decls: Vec<FileDecl>| -> Vec<WfFile> {
            decls
                .into_iter()
                .map(|d| WfFile {
                    name: d.uri,
                    size: d.size,
                })
                .collect()
        };
        tasks.push(WfTask {
            id: t.id,
            argv: Some(argv),
            parents: t.after,
            runtime_secs: runtime_secs.map(|s| s as f64),
            // A parallel task's size is its nodes and processors, not the file's cores.
            cores: match (t.nodes, t.procs) {
                (None, None) => Some(f64::from(t.cores.unwrap_or(cores))),
                _ => t.cores.map(f64::from),
            },
            moldable: t.max_cores.map(|m| (m, t.serial_fraction)),
            inputs: files(t.inputs),
            outputs: files(t.outputs),
            gpus: t.gpus,
            resources: t.resources,
            nodes: t.nodes,
            procs: t.procs,
        });
    }
    let default_name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workflow".into());
    let base = AppSpec {
        name: file.name.unwrap_or(default_name),
        command: "workflow".into(),
        tasks: TaskSource::Lines(Vec::new()),
        cores,
        memory_mb: file
            .memory
            .as_deref()
            .map(parse_memory_mb)
            .transpose()
            .context("memory")?
            .unwrap_or(0),
        env: file.env,
        workdir: file.workdir,
        max_attempts: file.max_attempts.unwrap_or(3),
        timeout_secs: file
            .timeout
            .as_deref()
            .map(parse_duration_secs)
            .transpose()
            .context("timeout")?,
        output_dir: file.output_dir,
        inputs: vec![],
        outputs: vec![],
        data_intensive: false,
        dag: None,
        gpus: file.gpus,
        resources: file.resources,
        nodes: None,
        procs: None,
    };
    Ok(Workflow {
        name: base.name.clone(),
        tasks,
        makespan_secs: None,
        base: Some(base),
        literal_files: true,
    })
}
