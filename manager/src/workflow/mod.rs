//! Workflow (DAG) applications read from WfCommons WfFormat JSON, Pegasus DAX files and
//! application files with `[[task]]` tables ([`tasks_file`]) into one [`Workflow`], and
//! turned into an [`AppSpec`] with a DAG. `hetpilot submit --wfcommons/--dax/FILE` and the
//! manager's `POST /v1/workflows?format=wfcommons|dax|tasks` both read workflows with this
//! code, so a file reads the same whichever way it is sent. With emulation, each task runs
//! the agent's built-in emulator instead of its program (see `agent/src/emulate.rs`): it
//! reads its inputs, burns CPU for its recorded runtime × F and writes its outputs at their
//! recorded sizes × F.
//!
//! Files: a file some task produces is staged through the manager's file service (the
//! producer's output, the consumer's input), named under a prefix unique to this
//! submission. Files no task produces (the workflow's external inputs) are created at
//! their recorded sizes when emulated, or taken from files the submitter stores under the
//! same prefix before the submission, and staged the same way (see [`inputs`]); otherwise
//! they are the tasks' business (a shared filesystem or the working directory).

pub mod dax;
pub mod inputs;
mod lenient;
pub mod tasks_file;
pub mod wfcommons;

use anyhow::{bail, Context};
use hetpilot_protocol::dag::{DagSpec, DagTask};
use hetpilot_protocol::files::FileDecl;
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use std::collections::{BTreeMap, HashMap};

/// The kinds of file an application is read from, each bounded by its own multiple of the
/// manager's submit limit: a file is at most a few times the JSON of its application, so a
/// file past its bound makes an application the manager refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A WfCommons instance: recorded ones are 3 to 5 times the JSON of their application
    /// (fields it does not use, indentation).
    WfCommons,
    /// A Pegasus DAX: about twice its application's JSON. Read whole into a tree of about
    /// 5 bytes a byte, so its bound is tighter.
    Dax,
    /// An application file (TOML), with or without `[[task]]` tables.
    AppFile,
}

impl FileKind {
    /// How many times the submit limit a file of this kind may be.
    pub fn per_submit(self) -> u64 {
        match self {
            FileKind::WfCommons => 8,
            FileKind::Dax | FileKind::AppFile => 4,
        }
    }

    /// The kind, for messages: "a WfCommons instance".
    pub fn name(self) -> &'static str {
        match self {
            FileKind::WfCommons => "a WfCommons instance",
            FileKind::Dax => "a DAX",
            FileKind::AppFile => "an application file",
        }
    }
}

/// Refuses a runtime or size factor that is not a number >= 0; `field` names it.
pub fn check_scale(field: &str, factor: f64) -> anyhow::Result<()> {
    if !(factor.is_finite() && factor >= 0.0) {
        bail!("{field} must be a number >= 0");
    }
    Ok(())
}

/// A prefix unique to a submission made now: `wf-MILLISECONDS`.
pub fn fresh_prefix() -> String {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("wf-{stamp}")
}

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
            variants: Vec::new(),
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

/// A file's name in the file service: under the submission's prefix, one component.
pub fn staged_name(prefix: &str, id: &str) -> String {
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
pub fn scale_bytes(bytes: u64, scale: f64) -> u64 {
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

#[cfg(test)]
pub(crate) mod wfcommons_fuzz_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_count_of_zero_is_cpu_only_and_a_nan_is_refused() {
        let mut t = WfTask {
            id: "a".into(),
            gpus: Some(0.0),
            ..WfTask::default()
        };
        assert_eq!(task_gpus(&t).unwrap(), None, "gpuCount 0: CPU-only");
        t.gpus = Some(f64::NAN);
        assert!(task_gpus(&t)
            .unwrap_err()
            .to_string()
            .contains("not a number"));
    }
}
