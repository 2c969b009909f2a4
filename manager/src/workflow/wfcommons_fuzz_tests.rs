//! Property tests of the WfCommons reader: mutated instances (hostile numbers and strings in
//! place of any token, lines dropped, duplicated or cut) read to the same application as a
//! reference reader that walks a `serde_json::Value` of the whole file the way the reader
//! used to, or are refused by both; never a panic. Two refusals differ: a field named twice
//! in one object (the reference kept the last) and a number past f64 in a field nothing
//! reads (the reference refused it).

use super::*;
use hetpilot_core::fuzz::inputs;
use proptest::prelude::*;

/// 1.5 with every field the reader uses, some of the wrong type, and fields it ignores.
pub(crate) const SPLIT: &str = r#"{
    "name": "fuzz",
    "schemaVersion": "1.5",
    "workflow": {
        "specification": {
            "tasks": [
                {
                    "name": "split",
                    "id": "split",
                    "parents": [],
                    "children": ["count", "sum"],
                    "inputFiles": ["in.txt", 7],
                    "outputFiles": ["part.1", "part.2"]
                },
                {
                    "id": "count",
                    "parents": ["split"],
                    "children": ["sum"],
                    "inputFiles": ["part.1"],
                    "outputFiles": ["count.txt"]
                },
                {
                    "name": "sum",
                    "parents": "split",
                    "children": [],
                    "inputFiles": ["part.2", "count.txt"],
                    "outputFiles": []
                }
            ],
            "files": [
                {"id": "in.txt", "sizeInBytes": 100},
                {"id": "part.1", "sizeInBytes": 40},
                {"id": "part.2", "sizeInBytes": "40"},
                {"id": "count.txt", "sizeInBytes": 3.5},
                "nope"
            ]
        },
        "execution": {
            "makespanInSeconds": 12.5,
            "tasks": [
                {
                    "id": "split",
                    "runtimeInSeconds": 2,
                    "coreCount": 2,
                    "command": {"program": "split", "arguments": ["-n", 2, {"k": true}]},
                    "machines": ["node-1"]
                },
                {
                    "id": "count",
                    "runtimeInSeconds": "3",
                    "coreCount": 1.5,
                    "command": {"program": 5, "arguments": ["x"]}
                },
                {
                    "id": "sum",
                    "runtimeInSeconds": 1.25,
                    "command": {"arguments": ["/bin/sum", "a"]}
                },
                ["junk"]
            ]
        }
    }
}"#;

/// 1.4, flat.
pub(crate) const FLAT: &str = r#"{
    "name": "flat",
    "schemaVersion": "1.4",
    "workflow": {
        "makespanInSeconds": 3,
        "tasks": [
            {
                "name": "a",
                "id": "a",
                "runtimeInSeconds": 1,
                "cores": 4,
                "command": {"program": "a.sh", "arguments": ["a.sh", "-v"]},
                "files": [
                    {"name": "f", "sizeInBytes": 10, "link": "output"},
                    {"name": 3, "link": "output"},
                    {"name": "in", "sizeInBytes": -1, "link": 5}
                ]
            },
            {
                "name": "b",
                "parents": ["a", 1],
                "runtimeInSeconds": 2,
                "files": [{"name": "f", "sizeInBytes": 10, "link": "input"}]
            }
        ]
    }
}"#;

/// The reader as it was: a `Value` of the whole file, read with `as_str` / `as_f64`.
mod value_reader {
    use super::super::{WfFile, WfTask, Workflow};
    use anyhow::{bail, Context};
    use serde::Deserialize;
    use serde_json::Value;
    use std::collections::HashMap;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Instance {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        schema_version: Option<String>,
        workflow: Value,
    }

    #[derive(Deserialize)]
    struct Command {
        #[serde(default)]
        program: Option<String>,
        #[serde(default)]
        arguments: Vec<Value>,
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
        match c.program.filter(|p| !p.is_empty()) {
            Some(p) if args.first().is_some_and(|a| a.ends_with(&p)) => Some(args),
            Some(p) => {
                args.insert(0, p);
                Some(args)
            }
            None => (!args.is_empty()).then_some(args),
        }
    }

    fn id_of(t: &Value) -> Option<String> {
        t.get("id")
            .or_else(|| t.get("name"))?
            .as_str()
            .map(String::from)
    }

    pub fn parse(text: &str) -> anyhow::Result<Workflow> {
        let inst: Instance = serde_json::from_str(text)?;
        let version = inst.schema_version.unwrap_or_default();
        if !["1.4", "1.5", "1.6"].contains(&version.as_str()) {
            bail!("version");
        }
        let w = &inst.workflow;
        let mut wf = if version == "1.4" {
            let tasks = w.get("tasks").and_then(Value::as_array).context("tasks")?;
            let mut out = Vec::new();
            for t in tasks {
                let mut task = WfTask {
                    id: id_of(t).context("id")?,
                    parents: strings(t.get("parents")),
                    runtime_secs: t.get("runtimeInSeconds").and_then(Value::as_f64),
                    cores: t.get("cores").and_then(Value::as_f64),
                    argv: argv_of(t.get("command")),
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
            Workflow {
                tasks: out,
                makespan_secs: w.get("makespanInSeconds").and_then(Value::as_f64),
                ..Workflow::default()
            }
        } else {
            let spec = w.get("specification").context("specification")?;
            let tasks = spec
                .get("tasks")
                .and_then(Value::as_array)
                .context("tasks")?;
            let sizes: HashMap<String, u64> = spec
                .get("files")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| {
                    Some((
                        f.get("id")?.as_str()?.to_string(),
                        f.get("sizeInBytes")?.as_u64()?,
                    ))
                })
                .collect();
            let runs: HashMap<String, &Value> = w
                .pointer("/execution/tasks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|t| Some((t.get("id")?.as_str()?.to_string(), t)))
                .collect();
            let file = |name: String| WfFile {
                size: sizes.get(&name).copied(),
                name,
            };
            let mut out = Vec::new();
            let mut children = Vec::new();
            for t in tasks {
                let id = id_of(t).context("id")?;
                for c in strings(t.get("children")) {
                    children.push((c, id.clone()));
                }
                let run = runs.get(&id);
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
            for (child, parent) in children {
                let c = out.iter().position(|t| t.id == child).context("child")?;
                if !out[c].parents.contains(&parent) {
                    out[c].parents.push(parent);
                }
            }
            Workflow {
                tasks: out,
                makespan_secs: w
                    .pointer("/execution/makespanInSeconds")
                    .and_then(Value::as_f64),
                ..Workflow::default()
            }
        };
        wf.name = inst.name.unwrap_or_else(|| "workflow".into());
        Ok(wf)
    }
}

fn opts() -> Options {
    Options {
        emulate: false,
        time_scale: 1.0,
        size_scale: 1.0,
        prefix: "wf-1".into(),
        max_attempts: 2,
        external: None,
    }
}

/// What a reader makes of `text`: the application, or `Err` with why not.
fn application(read: fn(&str) -> anyhow::Result<Workflow>, text: &str) -> Result<AppSpec, String> {
    let wf = read(text).map_err(|e| format!("{e:#}"))?;
    let makespan = wf.makespan_secs.map(f64::to_bits);
    let mut spec = wf.into_spec(&opts()).map_err(|e| format!("{e:#}"))?;
    // The makespan is not part of the application: keep it in sight through the name.
    spec.name = format!("{} {makespan:?}", spec.name);
    Ok(spec)
}

#[test]
fn the_samples_read_as_the_value_reader_read_them() {
    for text in [SPLIT, FLAT] {
        let ours = application(wfcommons::parse, text).unwrap();
        assert_eq!(Ok(ours), application(value_reader::parse, text));
    }
    // The wrong-typed fields are absent; the right-typed ones are kept.
    let d = |text| application(wfcommons::parse, text).unwrap().dag.unwrap();
    let split = d(SPLIT);
    let argv = |i: usize| split.tasks[i].argv.clone();
    assert_eq!(argv(0).unwrap(), ["split", "-n", "2", "{\"k\":true}"]);
    assert_eq!(argv(1), None, "program 5 is not a command");
    assert_eq!(argv(2).unwrap(), ["/bin/sum", "a"]);
    assert_eq!(
        split.tasks[1].runtime_secs, None,
        "runtime \"3\" is not a number"
    );
    assert_eq!(split.tasks[2].parents, [0, 1], "from the children lists");
    let flat = d(FLAT);
    assert_eq!(flat.tasks[0].outputs.len(), 1, "a file named 3 is no file");
    assert_eq!(flat.tasks[1].parents, [0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn mutated_instances_read_as_the_value_reader_read_them(
        text in inputs(&[SPLIT, FLAT]),
    ) {
        let ours = application(wfcommons::parse, &text);
        // Streamed from a reader (as `hetpilot submit` reads a file), the same (an error may
        // place itself a column apart).
        let streamed = application(|t| wfcommons::read(t.as_bytes()), &text);
        prop_assert_eq!(ours.as_ref().ok(), streamed.as_ref().ok());
        let reference = application(value_reader::parse, &text);
        match (&ours, &reference) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            // An object naming a field twice: the reference kept the last, the typed
            // reader refuses it.
            (Err(e), Ok(_)) => prop_assert!(e.contains("duplicate field"), "{e}"),
            // A number past f64 in a field nobody reads: the typed reader reads past it.
            (Ok(_), Err(e)) => prop_assert!(e.contains("number out of range"), "{e}"),
        }
    }
}

#[test]
fn a_value_of_the_wrong_type_where_an_object_or_list_goes_reads_as_absent() {
    let cases = [
        (
            r#"{"schemaVersion": "1.5", "workflow": 5}"#,
            Some("workflow.specification"),
        ),
        (
            r#"{"schemaVersion": "1.5", "workflow": {"specification": {"tasks": {}}}}"#,
            Some("workflow.specification.tasks is missing"),
        ),
        (
            r#"{"schemaVersion": "1.4", "workflow": {"tasks": "x"}}"#,
            Some("workflow.tasks"),
        ),
        (
            r#"{"schemaVersion": "1.5", "workflow": {"specification": {"tasks": [7]}}}"#,
            Some("specification task #0 has no id"),
        ),
        (
            r#"{"schemaVersion": "1.5", "workflow": {"specification": {"tasks":
                [{"id": "a", "parents": null, "inputFiles": {"x": 1}}], "files": 3},
                "execution": [1]}}"#,
            None,
        ),
    ];
    for (text, refused) in cases {
        let ours = wfcommons::parse(text).map_err(|e| format!("{e:#}"));
        assert_eq!(ours.is_err(), refused.is_some(), "{text}: {ours:?}");
        if let (Err(e), Some(why)) = (&ours, refused) {
            assert!(e.contains(why), "{text}: {e}");
        }
        assert_eq!(ours.is_err(), value_reader::parse(text).is_err(), "{text}");
    }
}
