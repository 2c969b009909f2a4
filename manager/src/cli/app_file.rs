//! Application files (TOML) and the submit flags' value syntax: memory sizes (`512M`),
//! durations (`10m`) (both shared with the manager: [`hetpilot::app_file`]), and ranges
//! (`1-100`). Errors name the file, the line and the field.

use anyhow::{anyhow, bail, Context};
use hetpilot_protocol::files::FileDecl;
use hetpilot_protocol::resources::ResourceAmount;
use hetpilot_protocol::spec::{AppSpec, SpecError, TaskSource};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

pub use hetpilot::app_file::{parse_duration_secs, parse_memory_mb};

/// The `[tasks]` table: exactly one of its keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TasksTable {
    each_line: Option<String>,
    array: Option<String>,
    lines: Option<Vec<String>>,
    params: Option<Vec<BTreeMap<String, toml::Value>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppFile {
    name: Option<String>,
    command: String,
    tasks: TasksTable,
    cores: Option<u32>,
    /// A parallel task's whole nodes and processors (see `hetpilot_protocol::parallel`).
    nodes: Option<u64>,
    procs: Option<u64>,
    memory: Option<String>,
    max_attempts: Option<u32>,
    timeout: Option<String>,
    workdir: Option<String>,
    output_dir: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Files each task reads and writes (names or URIs, templated like the command).
    #[serde(default)]
    inputs: Vec<FileDecl>,
    #[serde(default)]
    outputs: Vec<FileDecl>,
    /// Plan input staging with Het-HPS (`data_intensive = true`).
    #[serde(default)]
    data_intensive: bool,
    /// GPUs each task needs (`gpus = 1`, or `gpus = 0.25` to share a device).
    #[serde(
        default,
        deserialize_with = "hetpilot_protocol::resource_fields::de_gpus"
    )]
    gpus: Option<ResourceAmount>,
    /// Named counts each task needs (`resources = { fpga = 1 }`).
    #[serde(
        default,
        deserialize_with = "hetpilot_protocol::resource_fields::de_named"
    )]
    resources: BTreeMap<String, ResourceAmount>,
    /// Other ways to run the tasks (`[[variant]] name = "gpu", gpus = 1`), of which the
    /// scheduler picks one per task by measured runtimes.
    #[serde(default)]
    variant: Vec<hetpilot_protocol::variants::VariantSpec>,
}

/// Parses `A-B` (inclusive) or a single `N`.
pub fn parse_range(s: &str) -> anyhow::Result<TaskSource> {
    let bad = || anyhow!("`{s}` is not a range (like 1-100)");
    let (a, b) = s.trim().split_once('-').unwrap_or((s.trim(), s.trim()));
    let (start, end): (u64, u64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if end < start {
        bail!("range `{s}` is empty (its end is before its start)");
    }
    Ok(TaskSource::Array { start, end })
}

/// Reads one task per non-empty line.
pub fn read_lines(path: &Path) -> anyhow::Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect())
}

/// The line (1-based) where `field = ...` is set, to point errors at it.
fn line_of(text: &str, field: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.strip_prefix(field)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

fn at(path: &Path, text: &str, field: &str, problem: impl std::fmt::Display) -> anyhow::Error {
    match line_of(text, field) {
        Some(line) => anyhow!("{}:{line}: field `{field}`: {problem}", path.display()),
        None => anyhow!("{}: field `{field}`: {problem}", path.display()),
    }
}

fn param_value(v: toml::Value) -> String {
    match v {
        toml::Value::String(s) => s,
        other => other.to_string(),
    }
}

/// Reads and checks an application file.
pub fn load(path: &Path) -> anyhow::Result<AppSpec> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text, path)
}

/// Checks the text of an application file; `path` names it in errors and anchors
/// relative `each_line` files.
pub fn parse(text: &str, path: &Path) -> anyhow::Result<AppSpec> {
    let file: AppFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
        let msg = e.message().to_string();
        match line {
            Some(l) => anyhow!("{}:{l}: {msg}", path.display()),
            None => anyhow!("{}: {msg}", path.display()),
        }
    })?;
    let t = file.tasks;
    let given = [
        t.each_line.is_some(),
        t.array.is_some(),
        t.lines.is_some(),
        t.params.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(at(
            path,
            text,
            "tasks",
            "give exactly one of each_line, array, lines, params",
        ));
    }
    let tasks = if let Some(f) = t.each_line {
        let file = path.parent().unwrap_or(Path::new(".")).join(&f);
        TaskSource::Lines(read_lines(&file).map_err(|e| at(path, text, "each_line", e))?)
    } else if let Some(r) = t.array {
        parse_range(&r).map_err(|e| at(path, text, "array", e))?
    } else if let Some(lines) = t.lines {
        TaskSource::Lines(lines)
    } else {
        let sets = t.params.unwrap_or_default();
        TaskSource::Params(
            sets.into_iter()
                .map(|m| m.into_iter().map(|(k, v)| (k, param_value(v))).collect())
                .collect(),
        )
    };
    let memory_mb = match &file.memory {
        Some(m) => parse_memory_mb(m).map_err(|e| at(path, text, "memory", e))?,
        None => 0,
    };
    let timeout_secs = match &file.timeout {
        Some(d) => Some(parse_duration_secs(d).map_err(|e| at(path, text, "timeout", e))?),
        None => None,
    };
    let default_name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let spec = AppSpec {
        name: file.name.unwrap_or(default_name),
        command: file.command,
        tasks,
        cores: file.cores.unwrap_or(1),
        memory_mb,
        env: file.env,
        workdir: file.workdir,
        max_attempts: file.max_attempts.unwrap_or(3),
        timeout_secs,
        output_dir: file.output_dir,
        inputs: file.inputs,
        outputs: file.outputs,
        data_intensive: file.data_intensive,
        dag: None,
        gpus: file.gpus,
        resources: file.resources,
        nodes: file.nodes,
        procs: file.procs,
        variants: file.variant,
    };
    if let Err(e) = spec.validate() {
        let field = match &e {
            SpecError::Name => "name",
            SpecError::NoTasks => "tasks",
            SpecError::Command(_) => "command",
            SpecError::Field { field, .. } => field,
        };
        let problem = e.to_string();
        let problem = problem
            .split_once(": ")
            .map(|(_, p)| p.to_string())
            .unwrap_or(problem);
        return Err(at(path, text, field, problem));
    }
    Ok(spec)
}

#[cfg(test)]
#[path = "app_file_fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_full_file_loads() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "in.txt", "a\n\nb\r\n");
        let p = write(
            d.path(),
            "blast.toml",
            "command = \"grep {} db\"\nmemory = \"1G\"\ntimeout = \"2m\"\n[env]\nX = \"1\"\n[tasks]\neach_line = \"in.txt\"\n",
        );
        let spec = load(&p).unwrap();
        assert_eq!(spec.name, "blast");
        assert_eq!(spec.tasks, TaskSource::Lines(vec!["a".into(), "b".into()]));
        assert_eq!(spec.memory_mb, 1024);
        assert_eq!(spec.timeout_secs, Some(120));
    }

    #[test]
    fn gpu_and_named_requests_load_and_hostile_ones_name_the_field() {
        let file =
            |extra: &str| format!("command = \"train {{}}\"\n{extra}\n[tasks]\narray = \"1-4\"\n");
        let p = Path::new("train.toml");
        let spec = parse(&file("gpus = 0.25\nresources = { fpga = 1 }"), p).unwrap();
        assert_eq!(spec.gpus.unwrap().to_string(), "0.25");
        assert_eq!(spec.resources["fpga"].to_string(), "1");
        for (extra, want) in [
            ("gpus = nan", "field `gpus`: NaN is not a number"),
            ("gpus = -1", "field `gpus`: -1 must be above 0"),
            ("gpus = 1.5", "whole devices"),
            (
                "resources = { gpus = 1 }",
                "ask for GPUs with the `gpus` field",
            ),
            ("resources = { fpga = 0.00001 }", "field `resources.fpga`"),
            ("resources = { Bad = 1 }", "resource name"),
        ] {
            let e = parse(&file(extra), p).unwrap_err().to_string();
            assert!(e.contains(want), "{extra}: {e}");
        }
    }

    #[test]
    fn variants_load_from_variant_tables_and_hostile_ones_name_the_field() {
        let file = |variants: &str| {
            format!("command = \"train {{}}\"\n[tasks]\narray = \"1-4\"\n{variants}")
        };
        let p = Path::new("train.toml");
        let spec = parse(
            &file(
                "[[variant]]\nname = \"gpu\"\ngpus = 1\ncommand = \"train --gpu {}\"\n\
                 [[variant]]\nname = \"cpu\"\ncores = 8\n",
            ),
            p,
        )
        .unwrap();
        assert_eq!(spec.variants.len(), 2);
        assert_eq!(spec.variants[0].gpus.unwrap().to_string(), "1");
        assert_eq!(spec.variants[1].cores, 8);
        for (variants, want) in [
            (
                "[[variant]]\nname = \"g\"\ngpus = nan\n",
                "field `gpus`: NaN",
            ),
            (
                "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"a\"\ngpus = 1\n",
                "field `variants`: variant `a` is declared twice",
            ),
            (
                "[[variant]]\nname = \"a\"\ncores = 0\n",
                "cores must be at least 1",
            ),
            (
                "[[variant]]\nname = \"a\"\nmemory = 1\n",
                "unknown field `memory`",
            ),
        ] {
            let e = format!("{:#}", parse(&file(variants), p).unwrap_err());
            assert!(e.contains(want), "{variants}: {e}");
        }
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "a.toml",
            "command = \"x\"\ncors = 2\n[tasks]\narray = \"1-3\"\n",
        );
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("a.toml:2") && e.contains("cors"), "{e}");
        let p = write(
            d.path(),
            "b.toml",
            "name = \"b\"\ncommand = \"run {query}\"\n[tasks]\narray = \"1-3\"\n",
        );
        let e = load(&p).unwrap_err().to_string();
        assert!(
            e.contains("b.toml:2: field `command`") && e.contains("{query}"),
            "{e}"
        );
        let p = write(
            d.path(),
            "c.toml",
            "command = \"x\"\n[tasks]\narray = \"9-1\"\n",
        );
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("c.toml:3: field `array`"), "{e}");
        let p = write(d.path(), "d.toml", "command = \"x\"\n[tasks]\nlines = []\n");
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("field `tasks`") && e.contains("empty"), "{e}");
        let p = write(
            d.path(),
            "e.toml",
            "command = \"x\"\ncores = \"many\"\n[tasks]\narray = \"1\"\n",
        );
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("e.toml:2"), "{e}");
    }

    #[test]
    fn parallel_sizes_load_and_bad_ones_name_their_line_and_field() {
        let d = tempfile::tempdir().unwrap();
        let file = |name: &str, keys: &str| {
            write(
                d.path(),
                name,
                &format!("command = \"mpirun hello\"\n{keys}\n[tasks]\narray = \"1\"\n"),
            )
        };
        let spec = load(&file("a.toml", "nodes = 2\nprocs = 8")).unwrap();
        assert_eq!((spec.nodes, spec.procs), (Some(2), Some(8)));
        let e = load(&file("b.toml", "procs = 0")).unwrap_err().to_string();
        assert!(e.contains("b.toml:2: field `procs`"), "{e}");
        let e = load(&file("c.toml", "nodes = 3\nprocs = 4"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.toml:3: field `procs`"), "{e}");
        let e = load(&file("d.toml", "nodes = 2\ngpus = 1"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("d.toml:3: field `gpus`"), "{e}");
    }

    #[test]
    fn files_are_declared_and_escapes_refused_with_their_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "f.toml",
            "command = \"blast {query}\"\ndata_intensive = true\ninputs = [\"q/{query}.fa\", { uri = \"/shared/nr\", size = 4 }]\noutputs = [\"{query}.out\"]\n[tasks]\nparams = [{ query = \"q1\" }]\n",
        );
        let spec = load(&p).unwrap();
        assert_eq!(spec.inputs[1].size, Some(4));
        assert!(spec.data_intensive);
        assert_eq!(spec.outputs[0].uri, "{query}.out");
        let p = write(
            d.path(),
            "g.toml",
            "command = \"blast {query}\"\ninputs = [\"q/{query}.fa\"]\n[tasks]\nparams = [{ query = \"../../x\" }]\n",
        );
        let e = load(&p).unwrap_err().to_string();
        assert!(
            e.contains("g.toml:2: field `inputs`") && e.contains(".."),
            "{e}"
        );
    }

    /// The parameter values of `tests/data/app_file_params.json`, each set as
    /// `params = [{ p = VALUE }]`, become the task's text the file gives (`cli`); the
    /// Python client reads the same file and must give the same (python/tests).
    #[test]
    fn params_of_every_type_read_as_the_shared_examples_say() {
        let cases =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/app_file_params.json");
        let cases: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(cases).unwrap()).unwrap();
        let mut wrong = Vec::new();
        for case in &cases {
            let value = case["toml"].as_str().unwrap();
            let text = format!("command = \"x {{p}}\"\n[tasks]\nparams = [{{ p = {value} }}]\n");
            let spec = parse(&text, Path::new("p.toml")).unwrap();
            let TaskSource::Params(sets) = spec.tasks else {
                panic!("{value}: not params");
            };
            let read = &sets[0]["p"];
            if read != case["cli"].as_str().unwrap() {
                wrong.push(format!("{value:?} reads as {read:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn value_syntaxes() {
        assert_eq!(parse_memory_mb("512M").unwrap(), 512);
        assert_eq!(parse_memory_mb("2GiB").unwrap(), 2048);
        assert_eq!(parse_memory_mb("300").unwrap(), 300);
        assert!(parse_memory_mb("lots").is_err());
        // 400 digits: read as u64::MAX MiB before.
        let e = parse_memory_mb(&"9".repeat(400)).unwrap_err().to_string();
        assert!(e.contains("too large"), "{e}");
        assert!(parse_memory_mb("20000000000000000T").is_err());
        assert_eq!(parse_duration_secs("10m").unwrap(), 600);
        assert_eq!(parse_duration_secs("45").unwrap(), 45);
        assert!(parse_duration_secs("soon").is_err());
        assert_eq!(parse_range("1-100").unwrap().len(), 100);
        assert_eq!(parse_range("7").unwrap().len(), 1);
        assert!(parse_range("5-1").is_err());
    }
}
