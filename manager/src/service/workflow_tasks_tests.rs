//! Application files with `[[task]]` tables sent as text (`format=tasks`): the route makes
//! the application the CLI's reader makes of the file, and every hostile file (deep
//! nesting, a cycle, an unknown parent, a size out of range, a huge id, a `[tasks]` table
//! with its `each_line` file) is refused with a 4xx naming the field and the task.

use super::*;
use crate::service::test_support;
use hetpilot_core::fuzz::inputs as mutated;
use hetpilot_protocol::error_code::ErrorCode;
use proptest::prelude::*;

/// Three tasks: a fork and a join, with a runtime, files used as given, a parallel task.
const PIPE: &str = r#"
max_attempts = 2
memory = "1G"
timeout = "10m"
[env]
STAGE = "test"
[[task]]
id = "split"
command = "sh -c 'echo split'"
outputs = ["parts.txt"]
[[task]]
id = "count"
command = "wc -l parts.txt"
after = ["split"]
inputs = ["parts.txt"]
runtime = "30s"
[[task]]
id = "simulate"
command = "mpirun ./sim"
after = ["split", "count"]
procs = 8
"#;

fn request() -> WorkflowRequest {
    WorkflowRequest {
        format: WorkflowFormat::Tasks,
        emulate: false,
        time_scale: None,
        size_scale: None,
        inputs: ExternalInputs::Tasks,
        prefix: None,
        name: None,
    }
}

/// What `hetpilot submit pipe.toml` makes of `text`: the CLI's reader, named after the
/// file's stem, with `spec_from_args`'s options (its prefix is unused: files are given).
fn cli_spec(text: &str, emulate: bool) -> anyhow::Result<AppSpec> {
    let wf = crate::workflow::tasks_file::parse(text, "pipe.toml", "pipe")?;
    wf.into_spec(&Options {
        emulate,
        time_scale: 1.0,
        size_scale: 1.0,
        prefix: workflow::fresh_prefix(),
        max_attempts: 3,
        external: None,
    })
}

fn refused(what: &str, r: Result<impl std::fmt::Debug, ServiceError>) -> (ErrorCode, String) {
    let e = r.expect_err(what);
    (e.code(), e.to_string())
}

#[tokio::test]
async fn an_application_file_with_task_tables_is_the_application_the_cli_makes() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = test_support::open(dir.path(), &[]);
    let alice = test_support::user(&m, &admin, "alice").await;
    let named = WorkflowRequest {
        name: Some("pipe".into()),
        ..request()
    };
    let wf = read(WorkflowFormat::Tasks, PIPE.as_bytes(), 64 << 20).unwrap();
    let opts = m.workflow_options(&named).unwrap();
    let (ours, created) = m.workflow_spec(&alice, wf, &named, opts).await.unwrap();
    assert_eq!(ours, cli_spec(PIPE, false).unwrap());
    assert!(created.is_empty());
    let dag = ours.dag.as_ref().unwrap();
    assert_eq!(dag.tasks[2].parents, [0, 1]);
    assert_eq!(dag.tasks[2].procs, Some(8));
    assert_eq!(
        dag.tasks[1].inputs[0].uri, "parts.txt",
        "a file is used as given"
    );
    assert_eq!((ours.memory_mb, ours.timeout_secs), (1024, Some(600)));
    // Unnamed by the file and the request: `workflow`, as the CLI names a file without
    // a stem.
    let (unnamed, _) = m
        .workflow_spec(
            &alice,
            read(WorkflowFormat::Tasks, PIPE.as_bytes(), 64 << 20).unwrap(),
            &request(),
            m.workflow_options(&request()).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(unnamed.name, "workflow");
    let answer = m
        .submit_workflow(&alice, named, PIPE.as_bytes().to_vec().into())
        .await
        .unwrap();
    assert_eq!(answer.tasks, 3);
    // Emulated as `hetpilot submit pipe.toml --emulate`: the emulator runs, and no file
    // is created (the file says where each lives).
    let emulated = WorkflowRequest {
        emulate: true,
        name: Some("pipe".into()),
        ..request()
    };
    let wf = read(WorkflowFormat::Tasks, PIPE.as_bytes(), 64 << 20).unwrap();
    let opts = m.workflow_options(&emulated).unwrap();
    let (ours, created) = m.workflow_spec(&alice, wf, &emulated, opts).await.unwrap();
    assert_eq!(ours, cli_spec(PIPE, true).unwrap());
    assert!(created.is_empty(), "{created:?}");
    let argv = ours.dag.as_ref().unwrap().tasks[0].argv.clone().unwrap();
    assert_eq!(argv[0], workflow::EMULATOR);
}

#[tokio::test]
async fn hostile_application_files_are_refused_naming_the_field_and_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let overrides = [("limits.max_submit_mib", "1".to_string())];
    let (_, m, admin) = test_support::open(dir.path(), &overrides);
    let alice = test_support::user(&m, &admin, "alice").await;
    let task =
        |id: &str, extra: &str| format!("[[task]]\nid = \"{id}\"\ncommand = \"true\"\n{extra}\n");
    let deep_tables = format!(
        "{}\n[env]\nX = {}1{}\n",
        task("a", ""),
        "{ a = ".repeat(50_000),
        " }".repeat(50_000)
    );
    let deep_arrays = format!(
        "{}inputs = {}\"f\"{}\n",
        task("a", ""),
        "[".repeat(50_000),
        "]".repeat(50_000)
    );
    let huge_id = "x".repeat(1 << 20);
    let mut past_bound = task("a", "").into_bytes();
    past_bound.resize((4 << 20) + 1, b'\n');
    let cases: Vec<(&str, Vec<u8>, ErrorCode, Vec<&str>)> = vec![
        (
            "a cycle",
            format!(
                "{}{}{}",
                task("a", "after = [\"c\"]"),
                task("b", "after = [\"a\"]"),
                task("c", "after = [\"b\"]")
            )
            .into_bytes(),
            ErrorCode::InvalidField,
            vec![
                "the application file: field `after`",
                "the dependencies have a cycle",
                "->",
            ],
        ),
        (
            "an unknown parent",
            task("a", "after = [\"nope\"]").into_bytes(),
            ErrorCode::InvalidField,
            vec!["task `a`", "parent `nope`", "field `after`"],
        ),
        (
            "a task after itself",
            task("a", "after = [\"a\"]").into_bytes(),
            ErrorCode::InvalidField,
            vec!["field `after`", "task `a` depends on itself"],
        ),
        (
            "procs = 0",
            task("mpi", "procs = 0").into_bytes(),
            ErrorCode::InvalidField,
            vec![
                "the application file: field `procs`: task `mpi`",
                "at least 1",
            ],
        ),
        (
            "procs = 2^40",
            task("mpi", "procs = 1099511627776").into_bytes(),
            ErrorCode::InvalidField,
            vec!["field `procs`", "task `mpi`", "more than the limit"],
        ),
        (
            "cores = 2^40",
            task("wide", "cores = 1099511627776").into_bytes(),
            ErrorCode::InvalidField,
            vec![
                "the application file:4: task #1: field `cores`:",
                "1099511627776",
            ],
        ),
        (
            "a 1 MiB id",
            task(&huge_id, "").into_bytes(),
            ErrorCode::InvalidField,
            vec!["task #1", "field `id`", "(1048576 bytes)"],
        ),
        (
            "a 1 MiB parent",
            task("a", &format!("after = [\"{huge_id}\"]")).into_bytes(),
            ErrorCode::InvalidField,
            vec!["task `a`", "field `after`", "(1048576 bytes)"],
        ),
        (
            "a bad runtime",
            task("slow", "runtime = \"forever\"").into_bytes(),
            ErrorCode::InvalidField,
            vec!["task `slow`: runtime", "not a duration"],
        ),
        (
            "an unbalanced quote",
            "[[task]]\nid = \"q\"\ncommand = \"echo 'x\"\n"
                .as_bytes()
                .to_vec(),
            ErrorCode::InvalidField,
            vec!["task `q`: command", "quotes"],
        ),
        (
            "tables nested 50 000 deep",
            deep_tables.into_bytes(),
            ErrorCode::InvalidField,
            vec!["the application file:"],
        ),
        (
            "arrays nested 50 000 deep",
            deep_arrays.into_bytes(),
            ErrorCode::InvalidField,
            vec!["the application file:"],
        ),
        (
            "a [tasks] table with its each_line file",
            b"command = \"grep {} db\"\n[tasks]\neach_line = \"../../etc/passwd\"\n".to_vec(),
            ErrorCode::InvalidField,
            vec!["field `tasks`", "POST /v1/apps", "each_line"],
        ),
        (
            "no task at all",
            b"name = \"x\"\n".to_vec(),
            ErrorCode::InvalidField,
            vec!["field `task`", "no [[task]] tables"],
        ),
        (
            "not UTF-8",
            vec![b'#', 0xff, 0xfe],
            ErrorCode::InvalidField,
            vec!["the application file: not UTF-8"],
        ),
        (
            "past 4 x the submit limit",
            past_bound,
            ErrorCode::TooLarge,
            vec!["5 MiB is more than the 4 MiB an application file may be"],
        ),
    ];
    for (what, document, code, says) in cases {
        let (got, message) = refused(
            what,
            m.submit_workflow(&alice, request(), document.into()).await,
        );
        assert_eq!(got, code, "{what}: {message}");
        assert!(
            message.len() < 4096,
            "{what}: a {} byte message",
            message.len()
        );
        for s in says {
            assert!(message.contains(s), "{what}: `{s}` not in {message}");
        }
    }
    let stored = WorkflowRequest {
        inputs: ExternalInputs::Stored,
        prefix: Some("p".into()),
        ..request()
    };
    let (code, message) = refused(
        "stored inputs",
        m.submit_workflow(&alice, stored, task("a", "").into_bytes().into())
            .await,
    );
    assert_eq!(code, ErrorCode::InvalidField);
    assert!(message.contains("inputs=stored: an application file's files are used as given"));
    let (code, message) = refused(
        "its external inputs",
        m.workflow_inputs(&alice, request(), task("a", "").into_bytes().into())
            .await,
    );
    assert_eq!(code, ErrorCode::InvalidField);
    assert!(message.contains("format=tasks"), "{message}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Mutated application files: the manager accepts exactly those the CLI's reader
    /// makes an application of, and refuses the others as bad input.
    #[test]
    fn mutated_files_are_accepted_exactly_when_the_cli_reads_them(text in mutated(&[PIPE])) {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (cli, ours) = runtime.block_on(async {
            let (_, m, admin) = test_support::open(dir.path(), &[]);
            let alice = test_support::user(&m, &admin, "alice").await;
            let ours = m.submit_workflow(&alice, request(), text.clone().into_bytes().into()).await;
            (cli_spec(&text, false), ours)
        });
        match (&cli, &ours) {
            (Ok(spec), Ok(answer)) => prop_assert_eq!(answer.tasks, spec.tasks.len()),
            (Err(_), Err(e)) => prop_assert_eq!(e.code(), ErrorCode::InvalidField, "{}", e),
            (Ok(_), Err(e)) => prop_assert_eq!(e.code(), ErrorCode::InvalidField, "{}", e),
            (Err(e), Ok(_)) => prop_assert!(false, "the CLI refused, the manager took it: {e:#}"),
        }
    }
}
