//! What a researcher submits: an application (a command template, a task list, resource
//! needs, environment, retry and timeout policy) and its validation.

use crate::files::{FileDecl, FileTemplates, InputKind};
use crate::resources::{ResourceAmount, ResourceRequest};
use crate::template::{Inputs, TaskInput, Template, TemplateError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use thiserror::Error;

/// The tasks of an application.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TaskSource {
    /// One task per input line.
    Lines(Vec<String>),
    /// One task per integer in `start..=end`.
    Array {
        /// The first integer.
        start: u64,
        /// The last integer (inclusive); below `start`, there is no task.
        end: u64,
    },
    /// One task per parameter set.
    Params(Vec<BTreeMap<String, String>>),
}

impl TaskSource {
    /// How many tasks there are; None when the count does not fit a `u64` (only
    /// `array 0..=u64::MAX`: 2^64 tasks).
    pub fn count(&self) -> Option<u64> {
        match self {
            TaskSource::Lines(l) => u64::try_from(l.len()).ok(),
            TaskSource::Array { start, end } if end < start => Some(0),
            TaskSource::Array { start, end } => (end - start).checked_add(1),
            TaskSource::Params(p) => u64::try_from(p.len()).ok(),
        }
    }

    /// How many tasks there are, `u64::MAX` standing for the one count past it (2^64, which
    /// [`AppSpec::validate`] refuses): never wraps to 0.
    pub fn len(&self) -> u64 {
        self.count().unwrap_or(u64::MAX)
    }

    /// True when the source yields no task.
    pub fn is_empty(&self) -> bool {
        self.count() == Some(0)
    }

    /// What a command template may refer to for these tasks.
    pub fn inputs(&self) -> Inputs {
        match self {
            TaskSource::Lines(_) => Inputs::Lines,
            TaskSource::Array { .. } => Inputs::Array,
            TaskSource::Params(sets) => Inputs::of_params(sets),
        }
    }
}

impl Inputs {
    /// Named parameters: only names that every task defines may be used.
    pub fn of_params(sets: &[BTreeMap<String, String>]) -> Inputs {
        let mut common: Option<BTreeSet<String>> = None;
        for set in sets {
            let names: BTreeSet<String> = set.keys().cloned().collect();
            common = Some(match common {
                None => names,
                Some(c) => c.intersection(&names).cloned().collect(),
            });
        }
        Inputs::Params(common.unwrap_or_default())
    }
}

fn one() -> u32 {
    1
}
fn three() -> u32 {
    3
}

/// A submitted application.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppSpec {
    /// A name for people (1-128 printable characters); need not be unique.
    pub name: String,
    /// Command template; see [`crate::template`].
    pub command: String,
    /// The tasks, one per line, integer or parameter set.
    pub tasks: TaskSource,
    /// Cores each task needs.
    #[serde(default = "one")]
    pub cores: u32,
    /// Memory each task needs, in MiB (0: unspecified).
    #[serde(default)]
    pub memory_mb: u64,
    /// Environment variables each task gets, besides the `HETPILOT_*` ones.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory of the tasks on the node (default: the agent's work directory).
    #[serde(default)]
    pub workdir: Option<String>,
    /// Runs of one task before it is marked failed (lost agents and failures both count).
    #[serde(default = "three")]
    pub max_attempts: u32,
    /// Per-task wall-clock limit in seconds; the task's process group is killed past it.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// Where task stdout/stderr go on the node (default: the agent's work directory).
    #[serde(default)]
    pub output_dir: Option<String>,
    /// Files each task reads, templated like the command; see [`crate::files`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<FileDecl>,
    /// Files each task writes, stored back after it ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<FileDecl>,
    /// Plan where tasks run with Het-HPS so that tasks sharing input files go to the same
    /// agent (each file fetched once); otherwise tasks go first come, first served.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub data_intensive: bool,
    /// A workflow's dependencies, per-task commands and files (see [`crate::dag`]); the
    /// tasks are then `lines`, one per task, each its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dag: Option<crate::dag::DagSpec>,
    /// GPUs each task needs: whole devices (`2`) or a share of one device (`0.25`);
    /// `None`: a CPU-only task.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::resource_fields::de_gpus"
    )]
    pub gpus: Option<ResourceAmount>,
    /// Named counts each task needs besides cores, memory and GPUs (`fpga = 1`), as the
    /// platforms' profiles and agents offer them.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::resource_fields::de_named"
    )]
    pub resources: BTreeMap<String, ResourceAmount>,
    /// A parallel task's whole nodes: each run holds this many agents with all their
    /// slots (see [`crate::parallel`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    /// A parallel task's processors: each run holds this many slots over as many agents
    /// of one platform as it takes (with `nodes`: `procs / nodes` on each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procs: Option<u64>,
    /// Other ways to run the same tasks, of which the scheduler picks one per task by
    /// measured runtimes (see [`crate::variants`]); empty: the one way `command`, `cores`
    /// and `gpus` say. Application files write them as `[[variant]]` tables.
    #[serde(default, alias = "variant", skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<crate::variants::VariantSpec>,
}

/// Why an application was refused; nothing is stored when this is returned.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SpecError {
    /// The name is empty, too long or not printable.
    #[error("field `name`: an application needs a name (1-128 printable characters)")]
    Name,
    /// The task source yields no task.
    #[error("field `tasks`: the task list is empty")]
    NoTasks,
    /// The command template does not parse against the tasks' placeholders.
    #[error("field `command`: {0}")]
    Command(#[from] TemplateError),
    /// Another field is out of range or malformed.
    #[error("field `{field}`: {problem}")]
    Field {
        /// The field's name in application files, e.g. `cores` or `inputs`.
        field: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
}

/// The longest per-task timeout, in seconds (365 days): agents add it to clocks.
pub const MAX_TIMEOUT_SECS: u64 = 365 * 24 * 3600;

/// The most tasks one application may hold.
pub(crate) const MAX_TASKS: u64 = 100_000_000;

impl AppSpec {
    /// Checks the whole application and returns its parsed command template.
    pub fn validate(&self) -> Result<Template, SpecError> {
        let name_ok = !self.name.trim().is_empty()
            && self.name.chars().count() <= 128
            && !self.name.chars().any(char::is_control);
        if !name_ok {
            return Err(SpecError::Name);
        }
        if self.tasks.is_empty() {
            return Err(SpecError::NoTasks);
        }
        match self.tasks.count() {
            Some(n) if n <= MAX_TASKS => {}
            n => {
                let n = n.map_or_else(|| "18446744073709551616".to_string(), |n| n.to_string());
                return Err(SpecError::Field {
                    field: "tasks",
                    problem: format!("{n} tasks is more than the limit of {MAX_TASKS}"),
                });
            }
        }
        self.check_nul_bytes()?;
        if self.cores == 0 {
            return Err(SpecError::Field {
                field: "cores",
                problem: "must be at least 1".into(),
            });
        }
        if self.max_attempts == 0 {
            return Err(SpecError::Field {
                field: "max_attempts",
                problem: "must be at least 1".into(),
            });
        }
        if self.timeout_secs == Some(0) {
            return Err(SpecError::Field {
                field: "timeout_secs",
                problem: "must be at least 1 second (omit it for no limit)".into(),
            });
        }
        if let Some(t) = self.timeout_secs.filter(|&t| t > MAX_TIMEOUT_SECS) {
            return Err(SpecError::Field {
                field: "timeout_secs",
                problem: format!(
                    "{t} seconds is more than the limit of {MAX_TIMEOUT_SECS} (365 days; omit \
                     it for no limit)"
                ),
            });
        }
        if let Some(key) = self
            .env
            .keys()
            .find(|k| k.is_empty() || k.contains(['=', '\0']))
        {
            return Err(SpecError::Field {
                field: "env",
                problem: format!("`{key}` is not a valid environment variable name"),
            });
        }
        let template = Template::parse(&self.command, &self.tasks.inputs())?;
        self.resource_request()?;
        crate::variants::check(self)?;
        crate::parallel::size_of(self)?;
        self.check_files()?;
        if let Some(dag) = &self.dag {
            let TaskSource::Lines(names) = &self.tasks else {
                return Err(SpecError::Field {
                    field: "dag",
                    problem: "a workflow's tasks are lines, one name per task".into(),
                });
            };
            if self.data_intensive {
                return Err(SpecError::Field {
                    field: "data_intensive",
                    problem: "a workflow's tasks go by their dependencies, not by Het-HPS \
                              partitions"
                        .into(),
                });
            }
            if !(self.inputs.is_empty() && self.outputs.is_empty()) {
                return Err(SpecError::Field {
                    field: "inputs",
                    problem: "a workflow declares its files per task".into(),
                });
            }
            dag.check(names)?;
        }
        Ok(template)
    }

    /// What each task asks for besides cores and memory (a workflow task may ask for its
    /// own, see [`crate::dag::DagTask::resource_request`]); an error names the bad field.
    pub fn resource_request(&self) -> Result<ResourceRequest, SpecError> {
        crate::resource_fields::request_of(self.gpus, &self.resources, "")
    }

    /// Refuses a NUL byte anywhere a task's argv or environment is made from (the command,
    /// input lines, parameters, environment values): no process can be given one, so the
    /// task could only fail at every attempt. Names (`env` keys, files, directories) are
    /// checked where they are validated.
    fn check_nul_bytes(&self) -> Result<(), SpecError> {
        let nul = |field: &'static str, problem: String| SpecError::Field { field, problem };
        if self.command.contains('\0') {
            return Err(nul("command", "contains a NUL byte".into()));
        }
        match &self.tasks {
            TaskSource::Lines(lines) => {
                if let Some(i) = lines.iter().position(|l| l.contains('\0')) {
                    return Err(nul("tasks", format!("line {} contains a NUL byte", i + 1)));
                }
            }
            TaskSource::Params(sets) => {
                for (i, set) in sets.iter().enumerate() {
                    if let Some(k) = set
                        .iter()
                        .find(|(k, v)| k.contains('\0') || v.contains('\0'))
                        .map(|(k, _)| k)
                    {
                        return Err(nul(
                            "params",
                            format!(
                                "task {i}: parameter `{}` contains a NUL byte",
                                k.escape_debug()
                            ),
                        ));
                    }
                }
            }
            TaskSource::Array { .. } => {}
        }
        if let Some(key) = self
            .env
            .iter()
            .find(|(_, v)| v.contains('\0'))
            .map(|(k, _)| k)
        {
            return Err(nul(
                "env",
                format!("the value of `{}` contains a NUL byte", key.escape_debug()),
            ));
        }
        Ok(())
    }

    /// The file declarations agents render per task, if there are any.
    pub fn file_templates(&self) -> Option<FileTemplates> {
        let kind = match self.tasks {
            TaskSource::Lines(_) => InputKind::Lines,
            TaskSource::Array { .. } => InputKind::Array,
            TaskSource::Params(_) => InputKind::Params,
        };
        let t = FileTemplates {
            kind,
            owner: String::new(),
            inputs: self.inputs.clone(),
            outputs: self.outputs.clone(),
        };
        (!t.is_empty()).then_some(t)
    }

    /// Renders every task's files, so a name that escapes its root is refused at submit.
    fn check_files(&self) -> Result<(), SpecError> {
        let Some(files) = self.file_templates() else {
            return Ok(());
        };
        let fail = |task: Option<u64>, (field, e): (crate::files::Field, _)| SpecError::Field {
            field: field.name(),
            problem: match task {
                Some(i) => format!("task {i}: {e}"),
                None => format!("{e}"),
            },
        };
        let compiled = files
            .compile(&self.tasks.inputs())
            .map_err(|e| fail(None, e))?;
        for index in 0..self.tasks.len() {
            let input = match &self.tasks {
                TaskSource::Lines(l) => TaskInput::Line(&l[index as usize]),
                TaskSource::Array { start, .. } => TaskInput::Array(start + index),
                TaskSource::Params(p) => TaskInput::Params(&p[index as usize]),
            };
            compiled
                .render(index, input)
                .map_err(|e| fail(Some(index), e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "spec_fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(tasks: TaskSource) -> AppSpec {
        AppSpec {
            name: "a".into(),
            command: "echo {}".into(),
            tasks,
            cores: 1,
            memory_mb: 0,
            env: BTreeMap::new(),
            workdir: None,
            max_attempts: 3,
            timeout_secs: None,
            output_dir: None,
            inputs: vec![],
            outputs: vec![],
            data_intensive: false,
            dag: None,
            gpus: None,
            resources: BTreeMap::new(),
            nodes: None,
            procs: None,
            variants: Vec::new(),
        }
    }

    #[test]
    fn parallel_sizes_out_of_range_or_inconsistent_are_refused_naming_the_field() {
        let with = |nodes: Option<u64>, procs: Option<u64>| {
            let mut s = spec(TaskSource::Array { start: 0, end: 0 });
            s.nodes = nodes;
            s.procs = procs;
            s
        };
        let err = |s: AppSpec| s.validate().unwrap_err().to_string();
        assert!(err(with(None, Some(0))).starts_with("field `procs`: must be at least 1"));
        assert!(err(with(Some(0), None)).starts_with("field `nodes`"));
        assert!(err(with(None, Some(1 << 40))).starts_with("field `procs`: 1099511627776"));
        assert!(err(with(Some(1 << 40), None)).starts_with("field `nodes`"));
        assert!(err(with(Some(3), Some(4))).starts_with("field `procs`: 4 processors"));
        let mut gpus = with(Some(2), None);
        gpus.gpus = ResourceAmount::whole(1);
        assert!(err(gpus).starts_with("field `gpus`"));
        let mut cores = with(None, Some(4));
        cores.cores = 2;
        assert!(err(cores).starts_with("field `cores`"));
        assert_eq!(
            crate::parallel::size_of(&with(Some(2), Some(8))),
            Ok(Some(crate::parallel::ParallelSize::NodesOf {
                nodes: 2,
                per_node: 4
            }))
        );
        assert!(with(None, Some(4)).validate().is_ok());
    }

    #[test]
    fn file_names_escaping_their_root_are_refused_naming_the_field() {
        let mut s = spec(TaskSource::Lines(vec![
            "a".into(),
            "../../etc/passwd".into(),
        ]));
        s.inputs = vec!["in/{}".into()];
        let err = s.validate().unwrap_err().to_string();
        assert!(err.starts_with("field `inputs`: task 1:"), "{err}");
        s.tasks = TaskSource::Lines(vec!["a".into()]);
        assert!(s.validate().is_ok());
        s.outputs = vec!["/tmp/{}.out".into()];
        let err = s.validate().unwrap_err().to_string();
        assert!(err.starts_with("field `outputs`:"), "{err}");
        assert!(err.contains("absolute"), "{err}");
    }

    #[test]
    fn task_counts() {
        assert_eq!(TaskSource::Array { start: 1, end: 10 }.len(), 10);
        assert_eq!(TaskSource::Array { start: 5, end: 4 }.len(), 0);
        assert_eq!(TaskSource::Lines(vec!["x".into(); 3]).len(), 3);
    }

    #[test]
    fn the_largest_arrays_do_not_wrap() {
        // `array 0..=u64::MAX` holds 2^64 tasks: its count wrapped to 0 ("the task list is
        // empty"), and overflowed (a panic) in debug builds.
        let all = TaskSource::Array {
            start: 0,
            end: u64::MAX,
        };
        assert_eq!(all.count(), None);
        assert_eq!(all.len(), u64::MAX);
        assert!(!all.is_empty());
        let err = spec(all).validate().unwrap_err().to_string();
        assert_eq!(
            err,
            "field `tasks`: 18446744073709551616 tasks is more than the limit of 100000000"
        );
        let one = TaskSource::Array {
            start: u64::MAX,
            end: u64::MAX,
        };
        assert_eq!(one.count(), Some(1));
        let most = TaskSource::Array {
            start: 1,
            end: u64::MAX,
        };
        assert_eq!(most.count(), Some(u64::MAX));
        assert!(spec(most)
            .validate()
            .unwrap_err()
            .to_string()
            .contains("limit"));
    }

    #[test]
    fn empty_task_lists_are_refused() {
        assert_eq!(
            spec(TaskSource::Lines(vec![])).validate().unwrap_err(),
            SpecError::NoTasks
        );
        let reversed = TaskSource::Array { start: 9, end: 1 };
        assert_eq!(spec(reversed).validate().unwrap_err(), SpecError::NoTasks);
    }

    #[test]
    fn nul_bytes_in_what_makes_a_process_are_refused_naming_the_field() {
        let set: BTreeMap<String, String> = [("x".to_string(), "1".to_string())].into();
        let nul_value: BTreeMap<String, String> = [("x".to_string(), "a\0b".to_string())].into();
        let nul_key: BTreeMap<String, String> = [("x\0".to_string(), "1".to_string())].into();
        let params = |sets| {
            let mut s = spec(TaskSource::Params(sets));
            s.command = "run {x}".into();
            s
        };
        let mut command = spec(TaskSource::Array { start: 1, end: 2 });
        command.command = "echo a\0b".into();
        let mut env = spec(TaskSource::Array { start: 1, end: 2 });
        env.env.insert("GREETING".into(), "hi\0there".into());
        let mut env_key = spec(TaskSource::Array { start: 1, end: 2 });
        env_key.env.insert("A\0B".into(), "1".into());
        let lines = spec(TaskSource::Lines(vec!["a".into(), "b\0".into()]));
        for (s, field, says) in [
            (command, "command", "NUL"),
            (env, "env", "GREETING"),
            (env_key, "env", "not a valid"),
            (lines, "tasks", "line 2"),
            (params(vec![set.clone(), nul_value]), "params", "task 1"),
            (params(vec![nul_key, set.clone()]), "params", "task 0"),
        ] {
            let err = s.validate().unwrap_err().to_string();
            assert!(err.starts_with(&format!("field `{field}`")), "{err}");
            assert!(err.contains(says), "{err}");
        }
        assert!(params(vec![set.clone(), set]).validate().is_ok());
    }

    #[test]
    fn params_must_be_defined_by_every_task() {
        let a: BTreeMap<_, _> = [("x".to_string(), "1".to_string())].into();
        let b: BTreeMap<_, _> = [("y".to_string(), "2".to_string())].into();
        let mut s = spec(TaskSource::Params(vec![a.clone(), b]));
        s.command = "run {x}".into();
        assert!(matches!(s.validate(), Err(SpecError::Command(_))));
        s.tasks = TaskSource::Params(vec![a.clone(), a]);
        assert!(s.validate().is_ok());
    }

    #[test]
    fn field_errors_name_the_field() {
        let mut s = spec(TaskSource::Array { start: 1, end: 2 });
        s.cores = 0;
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("field `cores`"));
        let mut s = spec(TaskSource::Array { start: 1, end: 2 });
        s.env.insert("A=B".into(), "x".into());
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("field `env`"));
        let mut s = spec(TaskSource::Array { start: 1, end: 2 });
        s.command = "echo {nope}".into();
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("field `command`"));
    }

    #[test]
    fn resource_requests_travel_and_hostile_ones_are_refused_naming_the_field() {
        let mut s = spec(TaskSource::Array { start: 1, end: 2 });
        s.gpus = Some(ResourceAmount::parse(0.25).unwrap());
        s.resources
            .insert("fpga".into(), ResourceAmount::whole(1).unwrap());
        s.validate().unwrap();
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""gpus":0.25"#), "{json}");
        let back: AppSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.resource_request().unwrap().gpus().units(), 2_500);
        // An application stored before resources existed still reads back, CPU-only.
        let plain = spec(TaskSource::Array { start: 1, end: 2 });
        let old = serde_json::to_string(&plain).unwrap();
        assert!(!old.contains("gpus") && !old.contains("resources"), "{old}");
        assert!(serde_json::from_str::<AppSpec>(&old)
            .unwrap()
            .resource_request()
            .unwrap()
            .is_empty());
        let hostile = old.replace(r#""cores":1"#, r#""cores":1,"gpus":-3"#);
        let err = serde_json::from_str::<AppSpec>(&hostile)
            .unwrap_err()
            .to_string();
        assert!(err.contains("field `gpus`: -3 must be above 0"), "{err}");
        s.resources
            .insert("gpus".into(), ResourceAmount::whole(1).unwrap());
        let err = s.validate().unwrap_err().to_string();
        assert!(err.starts_with("field `resources`:"), "{err}");
        s.resources.clear();
        s.gpus = Some(ResourceAmount::parse(2.5).unwrap());
        let err = s.validate().unwrap_err().to_string();
        assert!(err.starts_with("field `gpus`:"), "{err}");
    }

    #[test]
    fn timeouts_are_bounded() {
        let mut s = spec(TaskSource::Array { start: 1, end: 2 });
        s.timeout_secs = Some(i64::MAX as u64);
        let err = s.validate().unwrap_err().to_string();
        assert!(err.starts_with("field `timeout_secs`"), "{err}");
        s.timeout_secs = Some(MAX_TIMEOUT_SECS + 1);
        assert!(s.validate().is_err());
        s.timeout_secs = Some(MAX_TIMEOUT_SECS);
        assert!(s.validate().is_ok());
    }
}
