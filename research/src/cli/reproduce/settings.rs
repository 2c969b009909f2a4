//! One reproduction experiment as committed in `profiles/reproduction/<paper>/<name>.toml`:
//! the command it runs (of `hetpilot-research`, or of `hetpilot`), its arguments for the full run and the overrides for
//! `--quick`, and a note per argument saying where the value comes from (the paper's
//! section, or our assumption and why). Turning a file into a command line is pure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Deserialize;

/// An experiment file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// What the experiment reproduces (the paper's figure or table).
    pub title: String,
    /// The `hetpilot-research` subcommand, e.g. `["simulate", "staging"]`.
    pub command: Vec<String>,
    /// File (in the output directory) that receives the command's standard output.
    #[serde(default)]
    pub stdout: Option<String>,
    /// Arguments of the full run: `name = value` becomes `--name value`; `true` becomes a
    /// bare `--name`, `false` omits it; arrays are joined with commas. `{out}` stands for
    /// the output directory, `{data}` for the reference-data directory.
    #[serde(default)]
    pub args: BTreeMap<String, toml::Value>,
    /// Arguments that `--quick` replaces or adds (fewer runs, fewer tasks).
    #[serde(default)]
    pub quick: BTreeMap<String, toml::Value>,
    /// Why each argument has its value: every key of `args` and `quick` needs a note.
    #[serde(default)]
    pub why: BTreeMap<String, String>,
}

/// An experiment ready to run: where it came from and its command line.
#[derive(Debug)]
pub struct Planned {
    /// `<paper>/<name>`, from the file's place under the settings directory.
    pub id: String,
    /// The paper folder (the output goes to `docs/reproduction/<paper>/`).
    pub paper: String,
    /// The experiment's file name without `.toml`.
    pub name: String,
    /// The parsed file.
    pub experiment: Experiment,
}

/// Reads and checks one experiment file.
pub fn read(path: &Path, paper: &str) -> anyhow::Result<Planned> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let experiment: Experiment = toml::from_str(&text)
        .with_context(|| format!("{} is not a valid experiment file", path.display()))?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .with_context(|| format!("{}: file name is not UTF-8", path.display()))?
        .to_string();
    if experiment.command.is_empty() {
        bail!("{}: `command` is empty", path.display());
    }
    for key in experiment.args.keys().chain(experiment.quick.keys()) {
        if !experiment.why.contains_key(key) {
            bail!(
                "{}: argument `{key}` has no note in [why] (say whether the paper gives it or why we assume it)",
                path.display()
            );
        }
    }
    Ok(Planned {
        id: format!("{paper}/{name}"),
        paper: paper.to_string(),
        name,
        experiment,
    })
}

/// Every experiment under `dir` (one sub-folder per paper), sorted by id; `paper` keeps
/// only that folder.
pub fn read_all(dir: &Path, paper: Option<&str>) -> anyhow::Result<Vec<Planned>> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).with_context(|| {
        format!(
            "cannot read the settings directory {} (run from the repository root or pass --settings)",
            dir.display()
        )
    })?;
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().to_string();
        if paper.is_some_and(|p| p != name) {
            continue;
        }
        for file in std::fs::read_dir(entry.path())? {
            let path = file?.path();
            if path.extension().is_some_and(|e| e == "toml") {
                out.push(read(&path, &name)?);
            }
        }
    }
    if let Some(p) = paper {
        if out.is_empty() {
            bail!("no experiments for paper `{p}` under {}", dir.display());
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// The substitutions of an argument value.
pub struct Places<'a> {
    /// The experiment's output directory.
    pub out: &'a Path,
    /// The reference-data directory.
    pub data: &'a Path,
}

/// The command line (without the program name) and the input files it reads.
pub fn command_line(
    e: &Experiment,
    quick: bool,
    places: &Places,
) -> anyhow::Result<(Vec<String>, Vec<PathBuf>)> {
    let mut args = e.args.clone();
    if quick {
        args.extend(e.quick.clone());
    }
    let mut line = e.command.clone();
    let mut inputs = Vec::new();
    for (key, value) in &args {
        let text = match value {
            toml::Value::Boolean(false) => continue,
            toml::Value::Boolean(true) => {
                line.push(format!("--{key}"));
                continue;
            }
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Array(items) => items
                .iter()
                .map(scalar)
                .collect::<anyhow::Result<Vec<_>>>()
                .with_context(|| format!("argument `{key}`"))?
                .join(","),
            other => bail!("argument `{key}`: {other} is not a string, number, boolean or array"),
        };
        if text.contains("{data}") {
            inputs.push(PathBuf::from(substitute(&text, places)));
        }
        line.push(format!("--{key}"));
        line.push(substitute(&text, places));
    }
    Ok((line, inputs))
}

fn scalar(v: &toml::Value) -> anyhow::Result<String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        other => bail!("{other} is not a string or number"),
    })
}

fn substitute(text: &str, places: &Places) -> String {
    text.replace("{out}", &places.out.to_string_lossy())
        .replace("{data}", &places.data.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(text: &str) -> Experiment {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn arguments_become_flags_and_quick_overrides_them() {
        let e = experiment(
            r#"
title = "t"
command = ["simulate", "staging"]
[args]
tasks = 2000
algorithms = ["minmin", "sjf"]
csv = "{out}/a.csv"
swf = "{data}/x.swf"
strict = true
json = false
[quick]
tasks = 100
[why]
tasks = "paper"
algorithms = "paper"
csv = "output"
swf = "trace"
strict = "assumed"
json = "no"
"#,
        );
        let places = Places {
            out: Path::new("/o"),
            data: Path::new("/d"),
        };
        let (full, inputs) = command_line(&e, false, &places).unwrap();
        assert_eq!(
            full,
            [
                "simulate",
                "staging",
                "--algorithms",
                "minmin,sjf",
                "--csv",
                "/o/a.csv",
                "--strict",
                "--swf",
                "/d/x.swf",
                "--tasks",
                "2000"
            ]
        );
        assert_eq!(inputs, [PathBuf::from("/d/x.swf")]);
        let (quick, _) = command_line(&e, true, &places).unwrap();
        assert!(quick.windows(2).any(|w| w == ["--tasks", "100"]));
        assert!(!quick.contains(&"2000".to_string()));
    }

    #[test]
    fn an_argument_without_a_note_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(
            &path,
            "title = \"t\"\ncommand = [\"simulate\"]\n[args]\nruns = 5\n[why]\n",
        )
        .unwrap();
        let err = read(&path, "p").unwrap_err().to_string();
        assert!(err.contains("`runs` has no note"), "{err}");
    }
}
