//! Each workflow task's own cores, from each format: `[[task]] cores` (the file's `cores`
//! by default), moldable `max_cores`/`serial_fraction`, WfCommons `coreCount` and a DAX
//! job's `pegasus::cores` profile; the application's cores are the widest task's.

use super::*;
use std::path::Path;

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

/// A task's (cores, max_cores, serial_fraction).
type TaskCores = (Option<u32>, Option<u32>, Option<f64>);

/// Every task's [`TaskCores`], and the application's cores.
fn cores_of(spec: &AppSpec) -> (Vec<TaskCores>, u32) {
    let dag = spec.dag.as_ref().unwrap();
    let per = dag
        .tasks
        .iter()
        .map(|t| (t.cores, t.max_cores, t.serial_fraction))
        .collect();
    (per, spec.cores)
}

#[test]
fn tasks_file_tasks_reserve_their_own_cores_or_the_files() {
    let text = r#"
cores = 2
[[task]]
id = "a"
command = "true"
[[task]]
id = "b"
command = "true"
cores = 1
[[task]]
id = "c"
command = "true"
cores = 4
[[task]]
id = "d"
command = "true"
cores = 1
max_cores = 8
serial_fraction = 0.2
"#;
    let wf = tasks_file::parse(text, Path::new("w.toml")).unwrap();
    let (per, app) = cores_of(&wf.into_spec(&opts()).unwrap());
    assert_eq!(app, 4, "the widest task's");
    assert_eq!(
        per,
        vec![
            (Some(2), None, None),
            (Some(1), None, None),
            (None, None, None), // the application's 4
            (Some(1), Some(8), Some(0.2)),
        ]
    );
}

#[test]
fn wfcommons_core_counts_and_dax_profiles_are_per_task() {
    let json = r#"{"name": "w", "schemaVersion": "1.5", "workflow": {
      "specification": {"tasks": [{"name": "a", "id": "a", "parents": [], "children": []},
                                  {"name": "b", "id": "b", "parents": [], "children": []}]},
      "execution": {"tasks": [{"id": "a", "runtimeInSeconds": 1, "coreCount": 3},
                              {"id": "b", "runtimeInSeconds": 1}]}}}"#;
    let (per, app) = cores_of(&wfcommons::parse(json).unwrap().into_spec(&opts()).unwrap());
    assert_eq!((per[0].0, per[1].0, app), (None, Some(1), 3));
    let dax = r#"<adag version="3.6" name="d">
      <job id="j1" name="x" runtime="1"><profile namespace="pegasus" key="cores">2</profile></job>
      <job id="j2" name="y" runtime="1"/>
    </adag>"#;
    let (per, app) = cores_of(&dax::parse(dax).unwrap().into_spec(&opts()).unwrap());
    assert_eq!((per[0].0, per[1].0, app), (None, Some(1), 2));
}
