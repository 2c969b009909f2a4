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
//! Nothing in such a file names another file to read (there is no `each_line`), so the
//! manager reads the text alone (`POST /v1/workflows?format=tasks`) as `hetpilot submit
//! FILE` reads it; ids and `after` entries are checked here, so no error echoes an id
//! longer than a task's name may be.

use super::{WfFile, WfTask, Workflow};
use crate::app_file::{parse_duration_secs, parse_memory_mb};
use anyhow::{anyhow, bail, Context};
use hetpilot_protocol::dag::MAX_TASK_NAME;
use hetpilot_protocol::files::FileDecl;
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};

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

/// At most this much of an id is shown in an error.
const SHOWN: usize = 64;

/// `id` for an error message: escaped, and cut short past [`SHOWN`] bytes.
fn shown(id: &str) -> String {
    if id.len() <= SHOWN {
        return id.escape_debug().to_string();
    }
    let mut end = SHOWN;
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", id[..end].escape_debug(), id.len())
}

/// The task (`task #N: `, counting `[[task]]` headers) and the field (`field `KEY`: `,
/// the key its line sets) that byte `at` of `text` is in, for a TOML error there.
fn place(text: &str, at: usize) -> String {
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let header = |l: &&str| l.trim_start().starts_with('[');
    let headers: Vec<&str> = before[..line_start].lines().filter(header).collect();
    let mut place = String::new();
    if headers
        .last()
        .is_some_and(|h| h.trim_start().starts_with("[[task]]"))
    {
        let n = headers
            .iter()
            .filter(|h| h.trim_start().starts_with("[[task]]"))
            .count();
        place.push_str(&format!("task #{n}: "));
    }
    let key = before[line_start..].trim_end().trim_end_matches('=').trim();
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if !key.is_empty() && key.len() <= SHOWN && key.chars().all(plain) {
        place.push_str(&format!("field `{key}`: "));
    }
    place
}

/// Refuses an id no task may have and an `after` entry that is no task's id, naming the
/// task and the field.
fn check_ids(tasks: &[TaskTable]) -> anyhow::Result<()> {
    for (i, t) in tasks.iter().enumerate() {
        if t.id.is_empty() || t.id.len() > MAX_TASK_NAME || t.id.chars().any(char::is_control) {
            bail!(
                "task #{} (`{}`): field `id`: an id is 1-{MAX_TASK_NAME} bytes without \
                 control characters",
                i + 1,
                shown(&t.id)
            );
        }
    }
    let ids: HashSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    for t in tasks {
        if let Some(p) = t.after.iter().find(|p| !ids.contains(p.as_str())) {
            bail!(
                "task `{}`: parent `{}` is not a task of this file (field `after`)",
                t.id,
                shown(p)
            );
        }
    }
    Ok(())
}

/// Reads a workflow application file's `text`; errors start with `label` (the file, and
/// the line of a TOML error) and name the task and the field. The application is named
/// `default_name` unless the file names it.
pub fn parse(text: &str, label: &str, default_name: &str) -> anyhow::Result<Workflow> {
    let file: WorkflowFile = toml::from_str(text).map_err(|e| match e.span() {
        Some(span) => {
            let line = text[..span.start].matches('\n').count() + 1;
            anyhow!("{label}:{line}: {}{}", place(text, span.start), e.message())
        }
        None => anyhow!("{label}: {}", e.message()),
    })?;
    check_ids(&file.task)?;
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
    let base = AppSpec {
        name: file.name.unwrap_or_else(|| default_name.to_string()),
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
        variants: Vec::new(),
    };
    Ok(Workflow {
        name: base.name.clone(),
        tasks,
        makespan_secs: None,
        base: Some(base),
        literal_files: true,
    })
}
