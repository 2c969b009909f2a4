//! Workflow documents submitted to the manager: the application is the one the CLI's
//! readers make of the file, emulated inputs are created in the caller's files, stored
//! inputs are found among the caller's own files only, and every hostile document or
//! field is refused with a 4xx naming what is wrong, never a panic or an `internal`.

use super::*;
use crate::service::test_support;
use crate::workflow::wfcommons_fuzz_tests::{FLAT, SPLIT};
use hetpilot_core::fuzz::inputs as mutated;
use hetpilot_protocol::error_code::ErrorCode;
use proptest::prelude::*;
use std::path::PathBuf;

fn sample(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples/workflows")
        .join(name);
    std::fs::read(path).unwrap()
}

fn request(format: WorkflowFormat) -> WorkflowRequest {
    WorkflowRequest {
        format,
        emulate: false,
        time_scale: None,
        size_scale: None,
        inputs: ExternalInputs::Tasks,
        prefix: None,
        name: None,
    }
}

fn emulated(format: WorkflowFormat) -> WorkflowRequest {
    WorkflowRequest {
        emulate: true,
        time_scale: Some(0.001),
        size_scale: Some(0.001),
        prefix: Some("wf-test".into()),
        ..request(format)
    }
}

/// The refusal's kind and message.
fn refused(what: &str, r: Result<impl std::fmt::Debug, ServiceError>) -> (ErrorCode, String) {
    let e = r.expect_err(what);
    (e.code(), e.to_string())
}

fn stored(dir: &Path, user: &str, name: &str) -> PathBuf {
    dir.join("files").join(user).join(name)
}

/// Epigenomics: 41 tasks, 5 external inputs.
const EPIGENOMICS: &str = "epigenomics-chameleon-hep-1seq-100k-001.json";

#[tokio::test]
async fn an_emulated_instance_is_the_application_the_cli_makes_and_its_inputs_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = test_support::open(dir.path(), &[]);
    let alice = test_support::user(&m, &admin, "alice").await;
    let document = sample(EPIGENOMICS);
    let req = emulated(WorkflowFormat::Wfcommons);
    // What `hetpilot submit --wfcommons F --emulate --time-scale 0.001 --size-scale
    // 0.001` makes of the file (spec_from_args, with the prefix fixed).
    let wf = workflow::wfcommons::read(&document[..]).unwrap();
    let uploads = inputs::emulated_within_bound(&wf, 0.001, "wf-test", "").unwrap();
    let mut opts = m.workflow_options(&req).unwrap();
    assert_eq!(
        (
            opts.emulate,
            opts.time_scale,
            opts.size_scale,
            opts.max_attempts
        ),
        (true, 0.001, 0.001, 3)
    );
    opts.external = Some(inputs::staged_sizes(&uploads));
    let cli = wf.into_spec(&opts).unwrap();
    let wf = read(WorkflowFormat::Wfcommons, &document, 64 << 20).unwrap();
    let (ours, created) = m
        .workflow_spec(&alice, wf, &req, m.workflow_options(&req).unwrap())
        .await
        .unwrap();
    assert_eq!(ours, cli);
    assert_eq!(created, uploads);

    let answer = m
        .submit_workflow(&alice, req, document.into())
        .await
        .unwrap();
    assert_eq!(answer.tasks, 41);
    for (name, bytes) in [("maq", 171u64), ("chr21.BS.bfa", 46_944)] {
        let file = stored(dir.path(), "alice", &format!("wf-test/{name}"));
        let meta = std::fs::metadata(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(meta.len(), bytes, "{name}");
        use std::os::unix::fs::MetadataExt;
        assert!(
            meta.blocks() <= 8,
            "{name} is sparse: {} blocks",
            meta.blocks()
        );
    }
}

#[tokio::test]
async fn stored_inputs_are_found_among_the_callers_own_files_only() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = test_support::open(dir.path(), &[]);
    let alice = test_support::user(&m, &admin, "alice").await;
    let bob = test_support::user(&m, &admin, "bob").await;
    let document = sample(EPIGENOMICS);
    let plan = m
        .workflow_inputs(
            &alice,
            request(WorkflowFormat::Wfcommons),
            document.clone().into(),
        )
        .await
        .unwrap();
    assert_eq!((plan.tasks, plan.inputs.len()), (41, 5), "{plan:?}");
    assert!(plan.prefix.starts_with("wf-"), "{plan:?}");
    let maq = plan.inputs.iter().find(|i| i.file == "maq").unwrap();
    assert_eq!(maq.name, format!("{}/maq", plan.prefix));
    assert_eq!(maq.size, Some(171_256));
    let with_stored = || WorkflowRequest {
        inputs: ExternalInputs::Stored,
        prefix: Some(plan.prefix.clone()),
        ..request(WorkflowFormat::Wfcommons)
    };
    // Bob stores all five; Alice has stored none of them.
    for input in &plan.inputs {
        let path = stored(dir.path(), "bob", &input.name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, input.file.as_bytes()).unwrap();
    }
    let (code, message) = refused(
        "alice's stored inputs",
        m.submit_workflow(&alice, with_stored(), document.clone().into())
            .await,
    );
    assert_eq!(code, ErrorCode::InvalidField);
    assert!(
        message.contains("5 of the workflow's 5 external inputs are not among your files")
            && message.contains("`maq`"),
        "{message}"
    );
    // Bob's own are found, staged at their stored sizes.
    let answer = m
        .submit_workflow(&bob, with_stored(), document.into())
        .await
        .unwrap();
    assert_eq!(answer.tasks, 41);
}

#[tokio::test]
async fn hostile_documents_and_fields_are_refused_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let overrides = [("limits.max_submit_mib", "1".to_string())];
    let (_, m, admin) = test_support::open(dir.path(), &overrides);
    let alice = test_support::user(&m, &admin, "alice").await;
    let registration = test_support::registration(&m, &admin).await;
    let (agent, _) = test_support::local_agent(&m, &registration, "n1").await;
    let wfcommons = || request(WorkflowFormat::Wfcommons);
    let dax = || request(WorkflowFormat::Dax);
    let cycle = r#"<adag version="3.6" name="c">
        <job id="a" name="a"/><job id="b" name="b"/>
        <child ref="a"><parent ref="b"/></child>
        <child ref="b"><parent ref="a"/></child>
    </adag>"#;
    let mut past_dax = cycle.as_bytes().to_vec();
    past_dax.resize((4 << 20) + 1, b' ');
    let mut past_wfcommons = SPLIT.as_bytes().to_vec();
    past_wfcommons.resize((8 << 20) + 1, b' ');
    // 17 tasks writing 1 GiB each: past the 16 GiB one submission may store.
    let tasks: Vec<String> = (0..17)
        .map(|i| {
            format!(
                r#"{{"name": "t{i}", "files": [{{"name": "o{i}", "sizeInBytes": 1073741824, "link": "output"}}]}}"#
            )
        })
        .collect();
    let seventeen_gib = format!(
        r#"{{"name": "big", "schemaVersion": "1.4", "workflow": {{"tasks": [{}]}}}}"#,
        tasks.join(",")
    );
    let long_name = format!(
        r#"{{"name": "long", "schemaVersion": "1.4", "workflow": {{"tasks": [{{"name": "t",
            "files": [{{"name": "{}", "sizeInBytes": 1, "link": "input"}}]}}]}}}}"#,
        "x".repeat(300)
    );
    let cases: Vec<(&str, WorkflowRequest, Vec<u8>, ErrorCode, &str)> = vec![
        (
            "malformed JSON",
            wfcommons(),
            b"{\"name\": \"x\",\n \"workflow\": {\"tasks\": [}".to_vec(),
            ErrorCode::InvalidField,
            "a WfCommons instance: ",
        ),
        (
            "malformed JSON's place",
            wfcommons(),
            b"{\"name\": \"x\",\n \"workflow\": {\"tasks\": [}".to_vec(),
            ErrorCode::InvalidField,
            "line 2",
        ),
        (
            "a DAX with a cycle",
            dax(),
            cycle.as_bytes().to_vec(),
            ErrorCode::InvalidField,
            "the dependencies have a cycle",
        ),
        (
            "XML that is no DAX",
            dax(),
            b"<html></html>".to_vec(),
            ErrorCode::InvalidField,
            "not a Pegasus DAX",
        ),
        (
            "a DAX that is not UTF-8",
            dax(),
            vec![0xff, 0xfe, b'<'],
            ErrorCode::InvalidField,
            "not UTF-8",
        ),
        (
            "a DAX past 4 x the submit limit",
            dax(),
            past_dax,
            ErrorCode::TooLarge,
            "5 MiB is more than the 4 MiB a DAX may be",
        ),
        (
            "an instance past 8 x the submit limit",
            wfcommons(),
            past_wfcommons,
            ErrorCode::TooLarge,
            "more than the 8 MiB a WfCommons instance may be",
        ),
        (
            "a scale without emulate",
            WorkflowRequest {
                time_scale: Some(2.0),
                ..wfcommons()
            },
            SPLIT.into(),
            ErrorCode::InvalidField,
            "time_scale needs emulate=true",
        ),
        (
            "a NaN scale",
            WorkflowRequest {
                size_scale: Some(f64::NAN),
                ..emulated(WorkflowFormat::Wfcommons)
            },
            SPLIT.into(),
            ErrorCode::InvalidField,
            "size_scale must be a number >= 0",
        ),
        (
            "a prefix that climbs",
            WorkflowRequest {
                prefix: Some("../bob".into()),
                ..wfcommons()
            },
            SPLIT.into(),
            ErrorCode::InvalidField,
            "prefix `../bob`",
        ),
        (
            "stored inputs without their prefix",
            WorkflowRequest {
                inputs: ExternalInputs::Stored,
                ..wfcommons()
            },
            SPLIT.into(),
            ErrorCode::InvalidField,
            "inputs=stored needs the prefix",
        ),
        (
            "stored and emulated",
            WorkflowRequest {
                inputs: ExternalInputs::Stored,
                ..emulated(WorkflowFormat::Wfcommons)
            },
            SPLIT.into(),
            ErrorCode::InvalidField,
            "exclude each other",
        ),
        (
            "emulated files past the bound",
            WorkflowRequest {
                size_scale: Some(1.0),
                ..emulated(WorkflowFormat::Wfcommons)
            },
            seventeen_gib.into_bytes(),
            ErrorCode::InvalidField,
            "more than the 16 GiB",
        ),
        (
            "an emulated input whose name no file may have",
            emulated(WorkflowFormat::Wfcommons),
            long_name.into_bytes(),
            ErrorCode::InvalidField,
            "a component of the name is longer than 255 bytes",
        ),
        (
            "a name the manager refuses",
            WorkflowRequest {
                name: Some("x".repeat(100_000)),
                ..wfcommons()
            },
            SPLIT.into(),
            ErrorCode::InvalidField,
            "name: ",
        ),
    ];
    for (what, req, document, code, says) in cases {
        let (got, message) = refused(what, m.submit_workflow(&alice, req, document.into()).await);
        assert_eq!(got, code, "{what}: {message}");
        assert!(message.contains(says), "{what}: {message}");
    }
    // Agents submit nothing; nothing was created for the refused ones.
    let (code, _) = refused(
        "an agent's",
        m.submit_workflow(&agent, wfcommons(), SPLIT.into()).await,
    );
    assert_eq!(code, ErrorCode::Forbidden);
    assert!(!dir.path().join("files/alice/wf-test").exists());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The fuzz tests' mutated instances: the manager accepts exactly those the CLI's
    /// reader makes an application of, and refuses the others as bad input.
    #[test]
    fn mutated_instances_are_accepted_exactly_when_the_cli_reads_them(
        text in mutated(&[SPLIT, FLAT]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (cli, ours) = runtime.block_on(async {
            let (_, m, admin) = test_support::open(dir.path(), &[]);
            let alice = test_support::user(&m, &admin, "alice").await;
            let req = request(WorkflowFormat::Wfcommons);
            let cli = workflow::wfcommons::parse(&text)
                .and_then(|wf| wf.into_spec(&m.workflow_options(&req).unwrap()));
            let ours = m.submit_workflow(&alice, req, text.clone().into_bytes().into()).await;
            (cli, ours)
        });
        match (&cli, &ours) {
            (Ok(spec), Ok(answer)) => prop_assert_eq!(answer.tasks, spec.tasks.len()),
            (Err(_), Err(e)) => prop_assert_eq!(e.code(), ErrorCode::InvalidField, "{}", e),
            // The manager's own checks (quotas, bounds) may refuse what the reader read,
            // as bad input, never as its own failure.
            (Ok(_), Err(e)) => prop_assert_eq!(e.code(), ErrorCode::InvalidField, "{}", e),
            (Err(e), Ok(_)) => prop_assert!(false, "the CLI refused, the manager took it: {e:#}"),
        }
    }
}
