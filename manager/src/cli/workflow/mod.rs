//! Workflow (DAG) applications for `hetpilot submit`: WfCommons WfFormat JSON
//! (`--wfcommons`), Pegasus DAX (`--dax`) and application files with `[[task]]` tables,
//! read into one [`Workflow`] and turned into an [`AppSpec`] with a DAG. With `--emulate`,
//! each task runs the agent's built-in emulator instead of its program (see
//! `agent/src/emulate.rs`): it reads its inputs, burns CPU for its recorded runtime × F
//! and writes its outputs at their recorded sizes × F.
//!
//! Files: a file some task produces is staged through the manager's file service (the
//! producer's output, the consumer's input), named under a prefix unique to this
//! submission. Files no task produces (the workflow's external inputs) are created at
//! their recorded sizes with `--emulate`, or taken from `--inputs-dir DIR`, stored under
//! the same prefix before the submission and staged the same way (see [`inputs`]);
//! otherwise they are the tasks' business (a shared filesystem or the working directory).

mod bounded;
pub mod dax;
pub mod inputs;
mod lenient;
pub mod tasks_file;
pub mod view;
pub mod wfcommons;

use crate::cli::submit_limit::{FileKind, SubmitLimit};
use anyhow::{bail, Context};
use hetpilot_protocol::dag::{DagSpec, DagTask};
use hetpilot_protocol::files::FileDecl;
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The program name agents run as their built-in emulator.
pub const EMULATOR: &str = "hetpilot-emulate";

/// One file a task reads or writes.
#[derive(Debug, Clone, PartialEq)]
pub struct WfFile {
    /// Its name (WfCommons file id, DAX logical name, or the app file's name or URI).
    pub name: String,
    /// Its recorded size in bytes.
    pub size: Option<u64>,
}

/// One task of a workflow, as read from a file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WfTask {
    /// The workflow's task id.
    pub id: String,
    /// Its own command, if the file gives one.
    pub argv: Option<Vec<String>>,
    /// The ids of its parents.
    pub parents: Vec<String>,
    /// Its recorded runtime, seconds.
    pub runtime_secs: Option<f64>,
    /// Its recorded cores (its least, if moldable).
    pub cores: Option<f64>,
    /// A moldable task's most cores and Amdahl serial fraction (application files).
    pub moldable: Option<(u32, Option<f64>)>,
    /// Files it reads.
    pub inputs: Vec<WfFile>,
    /// Files it writes.
    pub outputs: Vec<WfFile>,
    /// GPUs it used or asks for (WfCommons `gpuCount`, a `[[task]]`'s `gpus`); 0 or
    /// none: a CPU-only task.
    pub gpus: Option<f64>,
    /// Named counts it asks for (a `[[task]]`'s `resources`).
    pub resources: BTreeMap<String, hetpilot_protocol::resources::ResourceAmount>,
    /// A parallel task's whole nodes and processors (a `[[task]]`'s `nodes`, `procs`).
    pub nodes: Option<u64>,
    pub procs: Option<u64>,
}

/// A workflow read from a file.
#[derive(Debug, Clone, Default)]
pub struct Workflow {
    /// Its name.
    pub name: String,
    /// Its tasks, in file order.
    pub tasks: Vec<WfTask>,
    /// The recorded makespan, seconds, when the file has one.
    pub makespan_secs: Option<f64>,
    /// Application settings of an application file (cores, attempts, env...).
    pub base: Option<AppSpec>,
    /// Files are URIs to use as given (application files), not ids to stage.
    pub literal_files: bool,
}

/// How to turn a workflow into an application.
#[derive(Debug, Clone)]
pub struct Options {
    /// Run the built-in emulator instead of each task's program.
    pub emulate: bool,
    /// The emulator's runtime factor.
    pub time_scale: f64,
    /// The emulator's file-size factor.
    pub size_scale: f64,
    /// Where staged files go in the file service (unique per submission).
    pub prefix: String,
    /// Runs of one task before it fails for good.
    pub max_attempts: u32,
    /// External inputs stored in the file service before the submission, by the
    /// workflow's name for them, with their staged sizes; `None`: they are not staged.
    pub external: Option<HashMap<String, u64>>,
}

/// The longest a scaled emulated file may be, bytes (1 GiB).
const MAX_EMULATED_FILE: f64 = 1_073_741_824.0;

impl Workflow {
    /// The application: one task per workflow task, named by its id, with its parents.
    /// Refuses duplicate ids, a missing parent and (for files to stage) a file produced by
    /// two tasks; the DAG's own checks (cycles, bounds) follow in `AppSpec::validate`.
    /// Commands and ids move into the application rather than being copied: a large
    /// workflow is not held twice.
    pub fn into_spec(mut self, opts: &Options) -> anyhow::Result<AppSpec> {
        if self.tasks.is_empty() {
            bail!("the workflow has no task");
        }
        let commands: Vec<Option<Vec<String>>> =
            self.tasks.iter_mut().map(|t| t.argv.take()).collect();
        let mut index: HashMap<&str, u32> = HashMap::with_capacity(self.tasks.len());
        for (i, t) in self.tasks.iter().enumerate() {
            if index.insert(&t.id, i as u32).is_some() {
                bail!("two tasks have the id `{}`", t.id);
            }
        }
        let producers = self.producers()?;
        let mut dag = Vec::with_capacity(self.tasks.len());
        let mut cores = 1u32;
        for (t, argv) in self.tasks.iter().zip(commands) {
            let mut parents = Vec::with_capacity(t.parents.len());
            for p in &t.parents {
                let &pi = index.get(p.as_str()).with_context(|| {
                    format!(
                        "task `{}`: parent `{p}` is not a task of this workflow",
                        t.id
                    )
                })?;
                if !parents.contains(&pi) {
                    parents.push(pi);
                }
            }
            cores = cores.max(task_cores(t));
            let mut task = self.task(t, argv, parents, &producers, opts);
            task.gpus = task_gpus(t)?;
            task.resources = t.resources.clone();
            dag.push(task);
        }
        // Each task reserves its own cores; the application's are the widest task's.
        let cores = self.base.as_ref().map_or(cores, |b| b.cores.max(cores));
        for (d, t) in dag.iter_mut().zip(&self.tasks) {
            let own = task_cores(t);
            d.cores = (own != cores).then_some(own);
            if let Some((most, alpha)) = t.moldable {
                d.cores = Some(own);
                d.max_cores = Some(most.max(own));
                d.serial_fraction = alpha;
            }
            if t.nodes.is_some() || t.procs.is_some() {
                // Its size is its nodes and processors: cores only when it says more
                // than one (which the check refuses, naming the field).
                d.cores = (own > 1).then_some(own);
                (d.nodes, d.procs) = (t.nodes, t.procs);
            }
        }
        let mut spec = self.base.take().unwrap_or_else(|| AppSpec {
            name: std::mem::take(&mut self.name),
            command: "workflow".into(),
            tasks: TaskSource::Lines(Vec::new()),
            cores,
            memory_mb: 0,
            env: BTreeMap::new(),
            workdir: None,
            max_attempts: opts.max_attempts,
            timeout_secs: None,
            output_dir: None,
            inputs: vec![],
            outputs: vec![],
            data_intensive: false,
            dag: None,
            gpus: None,
            resources: Default::default(),
            nodes: None,
            procs: None,
        });
        spec.cores = cores;
        spec.tasks = TaskSource::Lines(self.tasks.into_iter().map(|t| t.id).collect());
        spec.dag = Some(DagSpec { tasks: dag });
        spec.validate()?;
        Ok(spec)
    }

    /// The task that writes each file (for files to stage), refusing a file two write.
    fn producers(&self) -> anyhow::Result<HashMap<&str, &str>> {
        let mut producers: HashMap<&str, &str> = HashMap::new();
        for t in &self.tasks {
            for f in &t.outputs {
                if let Some(other) = producers.insert(&f.name, &t.id) {
                    if other != t.id {
                        bail!(
                            "file `{}` is produced by both `{other}` and `{}`",
                            f.name,
                            t.id
                        );
                    }
                }
            }
        }
        Ok(producers)
    }

    fn task(
        &self,
        t: &WfTask,
        argv: Option<Vec<String>>,
        parents: Vec<u32>,
        producers: &HashMap<&str, &str>,
        opts: &Options,
    ) -> DagTask {
        let external = |f: &WfFile| opts.external.as_ref()?.get(&f.name).copied();
        let declared = declared_names(t, producers);
        let staged = |f: &WfFile| FileDecl {
            uri: if self.literal_files {
                f.name.clone()
            } else {
                staged_name(&opts.prefix, &f.name)
            },
            size: external(f).or_else(|| f.size.map(|s| scaled_size(s, opts))),
            sha256: None,
            // The program finds the file under the name the workflow gives it.
            name: if self.literal_files {
                None
            } else {
                declared.get(f.name.as_str()).cloned()
            },
        };
        // Files some task writes are staged, and external inputs stored before the
        // submission (unless the file says where each lives).
        let inputs: Vec<FileDecl> = t
            .inputs
            .iter()
            .filter(|f| {
                self.literal_files
                    || producers.contains_key(f.name.as_str())
                    || external(f).is_some()
            })
            .map(staged)
            .collect();
        let outputs: Vec<FileDecl> = t.outputs.iter().map(staged).collect();
        let argv = if opts.emulate {
            Some(emulator_argv(t, &inputs, &outputs, opts))
        } else {
            argv
        };
        DagTask {
            parents,
            argv,
            // The weight is what the task will take: scaled when emulated.
            runtime_secs: t
                .runtime_secs
                .map(|r| if opts.emulate { r * opts.time_scale } else { r }),
            inputs,
            outputs,
            ..DagTask::default()
        }
    }
}

/// The GPUs task `t` asks for: none for a missing or zero count; a hostile one (NaN,
/// negative, past the bound, finer than 0.0001) is refused naming the task.
fn task_gpus(t: &WfTask) -> anyhow::Result<Option<hetpilot_protocol::resources::ResourceAmount>> {
    match t.gpus {
        None => Ok(None),
        Some(0.0) => Ok(None),
        Some(x) => hetpilot_protocol::resources::ResourceAmount::parse(x)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("task `{}`: gpus: {e}", t.id)),
    }
}

/// The cores task `t` reserves (at least its moldable least): its recorded count,
/// rounded up, within the protocol's bound; 1 when it records none.
fn task_cores(t: &WfTask) -> u32 {
    t.cores
        .filter(|c| c.is_finite() && *c >= 1.0)
        .map_or(1, |c| {
            c.ceil()
                .min(f64::from(hetpilot_protocol::dag::MAX_TASK_CORES)) as u32
        })
}

/// A file's name in the file service: under the submission's prefix, one component.
/// The name each of `t`'s files has in its directory: the workflow's own name (a DAX
/// job's `JOB__NAME` back to `NAME`), where it is one path component and no other file of
/// the task has it. A file left out keeps its staged name.
fn declared_names<'a>(t: &'a WfTask, producers: &HashMap<&str, &str>) -> HashMap<&'a str, String> {
    let logical = |f: &'a WfFile| -> (&'a str, &'a str) {
        let producer = producers.get(f.name.as_str()).copied().unwrap_or(&t.id);
        let name = f
            .name
            .strip_prefix(producer)
            .and_then(|rest| rest.strip_prefix("__"))
            .filter(|rest| !rest.is_empty())
            .unwrap_or(&f.name);
        (f.name.as_str(), name)
    };
    let all: Vec<(&str, &str)> = t.inputs.iter().chain(&t.outputs).map(logical).collect();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for (_, name) in &all {
        *uses.entry(name).or_default() += 1;
    }
    let one_component = |n: &str| {
        !n.is_empty() && n != "." && n != ".." && n.len() <= 255 && !n.contains(['/', '\0'])
    };
    all.into_iter()
        .filter(|(_, name)| uses[name] == 1 && one_component(name))
        .map(|(staged, name)| (staged, name.to_string()))
        .collect()
}

fn staged_name(prefix: &str, id: &str) -> String {
    let flat: String = id
        .chars()
        .map(|c| if c == '/' || c.is_control() { '_' } else { c })
        .collect();
    let flat = if flat.starts_with('.') {
        format!("_{flat}")
    } else {
        flat
    };
    format!("{prefix}/{flat}")
}

fn scaled_size(bytes: u64, opts: &Options) -> u64 {
    if !opts.emulate {
        return bytes;
    }
    scale_bytes(bytes, opts.size_scale)
}

/// `bytes` × `scale`, at most the largest emulated file.
fn scale_bytes(bytes: u64, scale: f64) -> u64 {
    (bytes as f64 * scale).clamp(0.0, MAX_EMULATED_FILE) as u64
}

/// `hetpilot-emulate --runtime S --read NAME... --write NAME=BYTES...`: the names are
/// the ones the task sees in its run directory (an input's last component, an output's
/// name in the file service).
fn emulator_argv(
    t: &WfTask,
    inputs: &[FileDecl],
    outputs: &[FileDecl],
    o: &Options,
) -> Vec<String> {
    let base = |uri: &str| uri.rsplit('/').next().unwrap_or(uri).to_string();
    let runtime = t.runtime_secs.unwrap_or(0.0).max(0.0) * o.time_scale;
    let mut argv = vec![
        EMULATOR.to_string(),
        "--runtime".into(),
        format!("{runtime:.3}"),
    ];
    for f in inputs {
        argv.push("--read".into());
        argv.push(f.name.clone().unwrap_or_else(|| base(&f.uri)));
    }
    for f in outputs {
        // An output is written under its declared name, else the name its destination
        // gives it (a relative name whole, a URI's last component).
        let name = f.name.clone().unwrap_or_else(|| {
            hetpilot_protocol::files::parse_output(&f.uri)
                .map_or_else(|_| base(&f.uri), |(_, name)| name)
        });
        argv.push("--write".into());
        argv.push(format!("{name}={}", f.size.unwrap_or(0)));
    }
    argv
}

/// `hetpilot submit`'s workflow flags.
#[derive(Debug, Clone, clap::Args)]
pub struct SubmitArgs {
    /// A WfCommons WfFormat instance (JSON, schema 1.4-1.6) to run as a workflow.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dax", "each_line", "array"])]
    pub wfcommons: Option<PathBuf>,
    /// A Pegasus DAX (XML, 2.x or 3.x) to run as a workflow.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["each_line", "array"])]
    pub dax: Option<PathBuf>,
    /// Run each workflow task as the agent's built-in emulator (reads its inputs, burns
    /// CPU for its recorded runtime, writes its outputs at their recorded sizes).
    #[arg(long)]
    pub emulate: bool,
    /// With --emulate: multiply recorded runtimes by F.
    #[arg(long, value_name = "F", default_value_t = 1.0, requires = "emulate")]
    pub time_scale: f64,
    /// With --emulate: multiply recorded file sizes by F.
    #[arg(long, value_name = "F", default_value_t = 1.0, requires = "emulate")]
    pub size_scale: f64,
    /// The workflow's external inputs (files no task writes) are the files DIR/NAME:
    /// stored in the file service and staged to the tasks that read them. (With
    /// --emulate they are created at their recorded sizes instead.)
    #[arg(long, value_name = "DIR", conflicts_with = "emulate")]
    pub inputs_dir: Option<PathBuf>,
}

/// A workflow ready to submit: the application, and the external inputs to store first.
#[derive(Debug)]
pub struct Prepared {
    /// The application.
    pub spec: AppSpec,
    /// External inputs to store in the file service before submitting it.
    pub uploads: Vec<inputs::Upload>,
}

/// The application `hetpilot submit` asked for, if it is a workflow (`--wfcommons`,
/// `--dax`, or an application file with `[[task]]` tables), with its external inputs. A
/// workflow file past the bound `limit` sets is refused before it is read.
pub fn spec_from_args(
    args: &SubmitArgs,
    app_file: Option<&Path>,
    limit: &SubmitLimit,
) -> anyhow::Result<Option<Prepared>> {
    let (path, workflow) = if let Some(p) = &args.wfcommons {
        let in_file = |r: &mut _| wfcommons::read(r).with_context(|| format!("{}", p.display()));
        (
            p.as_path(),
            bounded::parse_streaming(p, FileKind::WfCommons, limit, in_file)?,
        )
    } else if let Some(p) = &args.dax {
        let text = bounded::read_to_string(p, FileKind::Dax, limit)?;
        (
            p.as_path(),
            dax::parse(&text).with_context(|| format!("{}", p.display()))?,
        )
    } else if let Some(p) = app_file {
        let text = bounded::read_to_string(p, FileKind::AppFile, limit)?;
        if !tasks_file::is_workflow(&text) {
            needs_no_workflow(args)?;
            return Ok(None);
        }
        let workflow = tasks_file::parse(&text, p).with_context(|| format!("{}", p.display()))?;
        (p, workflow)
    } else {
        needs_no_workflow(args)?;
        return Ok(None);
    };
    if !(args.time_scale.is_finite() && args.time_scale >= 0.0) {
        bail!("--time-scale must be a number >= 0");
    }
    if !(args.size_scale.is_finite() && args.size_scale >= 0.0) {
        bail!("--size-scale must be a number >= 0");
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut opts = Options {
        emulate: args.emulate,
        time_scale: args.time_scale,
        size_scale: args.size_scale,
        prefix: format!("wf-{stamp}"),
        max_attempts: 3,
        external: None,
    };
    let uploads = external_uploads(&workflow, args, &opts.prefix)
        .with_context(|| format!("{}", path.display()))?;
    opts.external = uploads.as_deref().map(inputs::staged_sizes);
    if let Some(m) = workflow.makespan_secs {
        eprintln!(
            "workflow `{}`: {} tasks, recorded makespan {m} s",
            workflow.name,
            workflow.tasks.len()
        );
    }
    let spec = workflow
        .into_spec(&opts)
        .with_context(|| format!("{}", path.display()))?;
    Ok(Some(Prepared {
        spec,
        uploads: uploads.unwrap_or_default(),
    }))
}

/// Refuses the workflow flags on an application that is not a workflow.
fn needs_no_workflow(args: &SubmitArgs) -> anyhow::Result<()> {
    for (set, flag) in [
        (args.emulate, "--emulate"),
        (args.inputs_dir.is_some(), "--inputs-dir"),
    ] {
        if set {
            bail!("{flag} needs a workflow: --wfcommons, --dax or [[task]] tables");
        }
    }
    Ok(())
}

/// The external inputs to store before submitting (`--emulate` or `--inputs-dir`), after
/// the size cap; `None`: they are not staged (a note says how many are left to the tasks).
fn external_uploads(
    workflow: &Workflow,
    args: &SubmitArgs,
    prefix: &str,
) -> anyhow::Result<Option<Vec<inputs::Upload>>> {
    if workflow.literal_files {
        // An application file says where each file lives.
        return Ok(None);
    }
    let files = inputs::external(workflow);
    if args.emulate {
        let uploads = inputs::emulated(&files, args.size_scale, prefix);
        let outputs = workflow
            .tasks
            .iter()
            .flat_map(|t| &t.outputs)
            .map(|f| scale_bytes(f.size.unwrap_or(0), args.size_scale));
        let total = uploads
            .iter()
            .map(|u| u.bytes)
            .chain(outputs)
            .fold(0u64, u64::saturating_add);
        inputs::check_total(
            total,
            "the emulated workflow's external inputs and outputs",
            "replay it with a smaller --size-scale",
        )?;
        return Ok(Some(uploads));
    }
    if let Some(dir) = &args.inputs_dir {
        let uploads = inputs::from_dir(&files, dir, prefix)?;
        let total = uploads.iter().map(|u| u.bytes).fold(0, u64::saturating_add);
        inputs::check_total(
            total,
            "the workflow's external inputs",
            "put them on a filesystem the nodes share and use that instead",
        )?;
        return Ok(Some(uploads));
    }
    if !files.is_empty() {
        eprintln!(
            "note: the workflow's {} external inputs (read by tasks, written by none) are not \
             staged; give --inputs-dir DIR to store and stage them",
            files.len()
        );
    }
    Ok(None)
}

#[cfg(test)]
mod cores_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod wfcommons_fuzz_tests;
