//! Reading workflows: the shipped WfCommons and DAX instances, the `[[task]]` form, and
//! every kind of bad input refused with a message that names the problem.

use super::*;
use hetpilot_protocol::spec::TaskSource;
use std::path::Path;

fn sample(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples/workflows")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn opts(emulate: bool) -> Options {
    Options {
        emulate,
        time_scale: 0.5,
        size_scale: 0.001,
        prefix: "wf-1".into(),
        max_attempts: 2,
        external: None,
    }
}

fn dag(spec: &AppSpec) -> &DagSpec {
    spec.dag.as_ref().unwrap()
}

#[test]
fn the_blast_instance_reads_as_a_fork_join_with_runtimes_and_staged_files() {
    let wf = wfcommons::parse(&sample("blast-chameleon-small-001.json")).unwrap();
    assert_eq!(wf.tasks.len(), 43);
    assert_eq!(wf.makespan_secs, Some(1279.3));
    let spec = wf.into_spec(&opts(true)).unwrap();
    let d = dag(&spec);
    let TaskSource::Lines(names) = &spec.tasks else {
        panic!()
    };
    let split = names
        .iter()
        .position(|n| n == "split_fasta_ID000001")
        .unwrap();
    let blast = names.iter().position(|n| n == "blastall_ID000002").unwrap();
    assert!(d.tasks[split].parents.is_empty());
    assert_eq!(d.tasks[blast].parents, [split as u32]);
    let cat = names
        .iter()
        .position(|n| n == "cat_blast_ID000042")
        .unwrap();
    assert_eq!(d.tasks[cat].parents.len(), 40);
    // blastall reads `blastall`, `small.fasta.0` and `nt`; only `small.fasta.0` is made by
    // a task, so only it is staged (scaled 6 B × 0.001 = 0 B).
    let b = &d.tasks[blast];
    assert_eq!(b.inputs.len(), 1);
    assert_eq!(b.inputs[0].uri, "wf-1/small.fasta.0");
    // Emulated at time scale 0.5: the scheduler weighs what the task will take.
    assert!((b.runtime_secs.unwrap() - 9.798843 * 0.5).abs() < 1e-9);
    let argv = b.argv.as_ref().unwrap();
    assert_eq!(argv[..3], ["hetpilot-emulate", "--runtime", "4.899"]);
    assert!(argv.windows(2).any(|w| w == ["--read", "small.fasta.0"]));
    // Stored under the workflow's prefix, seen by the task under its own name.
    assert_eq!(b.inputs[0].name.as_deref(), Some("small.fasta.0"));
    assert_eq!(b.outputs[0].uri, "wf-1/small.fasta.0.out");
    assert_eq!(b.outputs[0].name.as_deref(), Some("small.fasta.0.out"));
    assert!(argv.iter().any(|a| a.starts_with("small.fasta.0.out=")));
}

#[test]
fn montage_and_epigenomics_instances_read_and_their_edges_match_parents() {
    for (file, n) in [
        ("montage-chameleon-dss-05d-001.json", 58),
        ("epigenomics-chameleon-hep-1seq-100k-001.json", 41),
    ] {
        let spec = wfcommons::parse(&sample(file))
            .unwrap()
            .into_spec(&opts(false))
            .unwrap();
        assert_eq!(dag(&spec).tasks.len(), n, "{file}");
        let edges: usize = dag(&spec).tasks.iter().map(|t| t.parents.len()).sum();
        assert!(edges >= n - 12, "{file}: {edges} edges");
        // Without --emulate a task runs its recorded command.
        assert!(dag(&spec).tasks.iter().all(|t| t.argv.is_some()), "{file}");
    }
}

#[test]
fn a_montage_dax_names_each_jobs_outputs_after_the_job() {
    let wf = dax::parse(&sample("Montage_25.xml")).unwrap();
    assert_eq!(wf.tasks.len(), 25);
    let spec = wf.into_spec(&opts(true)).unwrap();
    let TaskSource::Lines(names) = &spec.tasks else {
        panic!()
    };
    let concat = names.iter().position(|n| n == "ID00014").unwrap();
    let t = &dag(&spec).tasks[concat];
    // mConcatFit reads the fit.txt of every mDiffFit parent, each under its own name.
    let fits: Vec<&str> = t
        .inputs
        .iter()
        .map(|f| f.uri.as_str())
        .filter(|u| u.ends_with("__fit.txt"))
        .collect();
    assert_eq!(fits.len(), t.parents.len(), "{fits:?}");
    assert!(fits.iter().all(|u| u.starts_with("wf-1/ID000")));
    // Many files one name: each keeps its staged name in the task's directory.
    assert!(t
        .inputs
        .iter()
        .filter(|f| f.uri.ends_with("__fit.txt"))
        .all(|f| f.name.is_none()));
    // One mDiffFit writes one fit.txt: under that name.
    let diff = names.iter().position(|n| n == "ID00006").unwrap();
    let outputs = &dag(&spec).tasks[diff].outputs;
    assert!(
        outputs
            .iter()
            .any(|f| f.uri.ends_with("ID00006__fit.txt") && f.name.as_deref() == Some("fit.txt")),
        "{outputs:?}"
    );
}

#[test]
fn a_dax_input_written_by_a_parent_has_the_size_the_parent_writes() {
    let wf = dax::parse(&sample("Montage_25.xml")).unwrap();
    let written: std::collections::HashMap<&str, Option<u64>> = wf
        .tasks
        .iter()
        .flat_map(|t| t.outputs.iter().map(|f| (f.name.as_str(), f.size)))
        .collect();
    let mut checked = 0;
    for t in &wf.tasks {
        for f in &t.inputs {
            if let Some(size) = written.get(f.name.as_str()) {
                assert_eq!(f.size, *size, "{} reads {}", t.id, f.name);
                checked += 1;
            }
        }
    }
    // Montage's consumers declare other sizes than their producers for diff.txt.
    let diff = wf
        .tasks
        .iter()
        .find(|t| t.id == "ID00014")
        .and_then(|t| t.inputs.iter().find(|f| f.name == "ID00012__diff.txt"));
    assert_eq!(diff.and_then(|f| f.size), Some(313_128));
    assert!(checked > 20, "{checked}");
}

#[test]
fn the_task_table_form_reads_commands_dependencies_and_files() {
    let text = r#"
name = "pipe"
max_attempts = 2
[[task]]
id = "split"
command = "split.sh 'in put.txt'"
outputs = ["parts.txt"]
[[task]]
id = "count"
command = "wc -l parts.txt"
after = ["split"]
inputs = ["parts.txt"]
runtime = "30s"
"#;
    assert!(tasks_file::is_workflow(text));
    let wf = tasks_file::parse(text, Path::new("pipe.toml")).unwrap();
    let spec = wf.into_spec(&opts(false)).unwrap();
    assert_eq!(spec.max_attempts, 2);
    let d = dag(&spec);
    assert_eq!(
        d.tasks[0].argv.as_ref().unwrap(),
        &["split.sh", "in put.txt"]
    );
    assert_eq!(d.tasks[1].parents, [0]);
    assert_eq!(d.tasks[1].inputs[0].uri, "parts.txt");
    assert_eq!(d.tasks[1].runtime_secs, Some(30.0));
}

fn task_file_error(text: &str) -> String {
    let wf = match tasks_file::parse(text, Path::new("w.toml")) {
        Ok(wf) => wf,
        Err(e) => return format!("{e:#}"),
    };
    format!("{:#}", wf.into_spec(&opts(false)).unwrap_err())
}

#[test]
fn bad_workflows_are_refused_with_the_reason() {
    let cycle = "[[task]]\nid='a'\ncommand='x'\nafter=['c']\n[[task]]\nid='b'\ncommand='x'\nafter=['a']\n[[task]]\nid='c'\ncommand='x'\nafter=['b']\n";
    let err = task_file_error(cycle);
    assert!(err.contains("cycle") && err.contains("->"), "{err}");
    let missing = "[[task]]\nid='a'\ncommand='x'\nafter=['nope']\n";
    let err = task_file_error(missing);
    assert!(
        err.contains("task `a`: parent `nope` is not a task"),
        "{err}"
    );
    let dup = "[[task]]\nid='a'\ncommand='x'\n[[task]]\nid='a'\ncommand='y'\n";
    assert!(task_file_error(dup).contains("two tasks have the id `a`"));
    let twice = "[[task]]\nid='a'\ncommand='x'\noutputs=['f']\n[[task]]\nid='b'\ncommand='y'\noutputs=['f']\n";
    let err = task_file_error(twice);
    assert!(
        err.contains("file `f` is produced by both `a` and `b`"),
        "{err}"
    );
    let unknown = "[[task]]\nid='a'\ncommand='x'\nbogus=1\n";
    assert!(task_file_error(unknown).contains("bogus"));
    let version = r#"{"schemaVersion": "1.3", "workflow": {"tasks": []}}"#;
    let err = format!("{:#}", wfcommons::parse(version).unwrap_err());
    assert!(
        err.contains("schemaVersion `1.3` is not supported"),
        "{err}"
    );
    let child = r#"{"schemaVersion": "1.5", "workflow": {"specification": {"tasks": [
        {"id": "a", "parents": [], "children": ["zz"]}]}}}"#;
    let err = format!("{:#}", wfcommons::parse(child).unwrap_err());
    assert!(err.contains("child `zz` is not a task"), "{err}");
    assert!(dax::parse("<notdax/>").is_err());
    assert!(dax::parse("<adag version=\"2.1\"><child ref=\"x\"/></adag>").is_err());
    assert!(wfcommons::parse("[1, 2").is_err());
}

#[test]
fn a_version_1_4_flat_instance_reads_files_by_link() {
    let text = r#"{"schemaVersion": "1.4", "name": "w", "workflow": {"makespanInSeconds": 3,
      "tasks": [
        {"name": "a", "id": "a", "type": "compute", "runtimeInSeconds": 1,
         "files": [{"name": "f", "sizeInBytes": 10, "link": "output"}]},
        {"name": "b", "id": "b", "type": "compute", "parents": ["a"], "runtimeInSeconds": 2,
         "files": [{"name": "f", "sizeInBytes": 10, "link": "input"}]}]}}"#;
    let spec = wfcommons::parse(text)
        .unwrap()
        .into_spec(&opts(true))
        .unwrap();
    let d = dag(&spec);
    assert_eq!(d.tasks[1].parents, [0]);
    assert_eq!(d.tasks[0].outputs[0].uri, "wf-1/f");
    assert_eq!(d.tasks[1].inputs[0].uri, "wf-1/f");
}

#[test]
fn a_list_of_more_tasks_than_a_workflow_may_have_is_refused_at_the_first_one_too_many() {
    let max = hetpilot_protocol::dag::MAX_DAG_TASKS;
    let list = |n: usize| format!("[{}0]", "0,".repeat(n - 1));
    let instance = |n: usize| {
        format!(
            r#"{{"schemaVersion": "1.5", "workflow": {{"execution": {{"tasks": {}"#,
            list(n)
        )
    };
    // Cut short after the list: refused for its length before the end is reached.
    let err = format!("{:#}", wfcommons::parse(&instance(max + 1)).unwrap_err());
    assert!(
        err.contains("more than 1000000 execution tasks (the most one workflow may have)"),
        "{err}"
    );
    let err = format!("{:#}", wfcommons::parse(&instance(max)).unwrap_err());
    assert!(err.contains("EOF"), "{err}");
}

#[test]
fn a_task_without_an_id_is_refused_only_in_the_list_its_version_reads() {
    let junk = r#"{"tasks": [{"parents": []}]}"#;
    let split = r#"{"schemaVersion": "1.5", "workflow": {"tasks": [7],
        "specification": {"tasks": [{"id": "a"}]}}}"#;
    assert_eq!(wfcommons::parse(split).unwrap().tasks.len(), 1);
    let flat = format!(
        r#"{{"schemaVersion": "1.4", "workflow": {{"specification": {junk},
            "tasks": [{{"id": "a"}}]}}}}"#
    );
    assert_eq!(wfcommons::parse(&flat).unwrap().tasks.len(), 1);
    let err = format!(
        "{:#}",
        wfcommons::parse(&flat.replace("1.4", "1.5")).unwrap_err()
    );
    assert!(err.contains("specification task #0 has no id"), "{err}");
}

#[test]
fn task_tables_and_wfcommons_gpu_counts_ask_for_gpus() {
    let text = "name = \"w\"\ngpus = 1\n[[task]]\nid = \"prep\"\ncommand = \"true\"\ngpus = 0.5\n\
                [[task]]\nid = \"train\"\ncommand = \"true\"\nafter = [\"prep\"]\nresources = { fpga = 2 }\n";
    let wf = super::tasks_file::parse(text, std::path::Path::new("w.toml")).unwrap();
    let spec = wf.into_spec(&opts(false)).unwrap();
    spec.validate().unwrap();
    assert_eq!(spec.gpus.unwrap().to_string(), "1");
    let d = dag(&spec);
    assert_eq!(d.tasks[0].gpus.unwrap().to_string(), "0.5");
    assert_eq!(d.tasks[1].resources["fpga"].to_string(), "2");
    let hostile = text.replace("gpus = 0.5", "gpus = -0.5");
    let wf = super::tasks_file::parse(&hostile, std::path::Path::new("w.toml")).unwrap();
    let err = wf.into_spec(&opts(false)).unwrap_err().to_string();
    assert!(
        err.contains("task `prep`: gpus: -0.5 must be above 0"),
        "{err}"
    );
}
