//! Named resources through the service: an agent's offer is checked at registration and
//! kept across a restart with what its runs were granted; a request no platform offers is
//! refused at submission, naming the field and what each platform offers.

use super::*;
use hetpilot_protocol::protocol::{PullRequest, PullResponse, RegisterRequest};
use hetpilot_protocol::resources::{GpuDevice, GpuVendor, ResourceOffer};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::AgentId;
use test_support::registration;

fn gpu(index: u32, uuid: &str) -> GpuDevice {
    GpuDevice {
        index,
        uuid: uuid.into(),
        model: "NVIDIA H100 80GB HBM3".into(),
        memory_mib: 81_559,
        vendor: GpuVendor::Nvidia,
    }
}

fn two_gpus() -> ResourceOffer {
    ResourceOffer {
        gpus: vec![gpu(0, "GPU-a"), gpu(1, "GPU-b")],
        named: Default::default(),
    }
}

async fn register(
    m: &Manager,
    registration: &Principal,
    offer: ResourceOffer,
) -> Result<(Principal, AgentId), ServiceError> {
    let r = m
        .register(
            registration,
            None,
            RegisterRequest {
                cores: 8,
                resources: offer,
                ..super::test_support::local_request("gpu1")
            },
        )
        .await?;
    Ok((m.authenticate(Some(&r.credential)).unwrap(), r.agent))
}

fn app(resources: serde_json::Value) -> AppSpec {
    let mut spec = serde_json::json!({
        "name": "train", "command": "true", "tasks": {"array": {"start": 0, "end": 2}}
    });
    spec.as_object_mut()
        .unwrap()
        .extend(resources.as_object().unwrap().clone());
    serde_json::from_value(spec).unwrap()
}

async fn pull(m: &Manager, agent: &Principal, id: AgentId) -> PullResponse {
    let req = PullRequest {
        max: 8,
        wait_ms: 0,
        started: vec![],
    };
    m.pull(agent, id, req).await.unwrap()
}

#[tokio::test]
async fn hostile_offers_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = test_support::open(dir.path(), &[]);
    let reg = registration(&m, &admin).await;
    let named = |name: &str| ResourceOffer {
        gpus: vec![],
        named: [(
            name.to_string(),
            hetpilot_protocol::resources::ResourceAmount::whole(1).unwrap(),
        )]
        .into(),
    };
    let cases = [
        (
            ResourceOffer {
                gpus: vec![gpu(0, "GPU-a"), gpu(0, "GPU-b")],
                ..Default::default()
            },
            "field `resources.gpus.index`: device 0 is listed twice",
        ),
        (
            ResourceOffer {
                gpus: vec![gpu(0, "GPU-a"), gpu(1, "GPU-a")],
                ..Default::default()
            },
            "field `resources.gpus.uuid`",
        ),
        (
            ResourceOffer {
                gpus: (0..65).map(|i| gpu(i, &format!("GPU-{i}"))).collect(),
                ..Default::default()
            },
            "65 devices is more than the limit of 64",
        ),
        (
            ResourceOffer {
                gpus: vec![gpu(0, "GPU-\u{1b}[31m")],
                ..Default::default()
            },
            "field `resources.gpus.uuid`",
        ),
        (
            ResourceOffer {
                gpus: vec![gpu(0, "")],
                ..Default::default()
            },
            "not empty",
        ),
        (named("gpus"), "field `resources.named`: GPUs are offered"),
        (named("Bad Name"), "field `resources.named`: resource name"),
    ];
    for (offer, want) in cases {
        let err = register(&m, &reg, offer).await.unwrap_err().to_string();
        assert!(err.contains(want), "{want}: {err}");
    }
    register(&m, &reg, two_gpus()).await.unwrap();
}

#[tokio::test]
async fn requests_no_platform_offers_are_refused_saying_what_each_offers() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = test_support::open(dir.path(), &[]);
    let alice = test_support::user(&m, &admin, "alice").await;
    let reg = registration(&m, &admin).await;
    test_support::local_agent(&m, &reg, "cpu1").await;
    let err = m
        .submit(&alice, app(serde_json::json!({"gpus": 1})))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("field `gpus`: a task asks for gpus 1"),
        "{err}"
    );
    assert!(err.contains("local: no GPUs or named resources"), "{err}");
    register(&m, &reg, two_gpus()).await.unwrap();
    m.submit(&alice, app(serde_json::json!({"gpus": 2})))
        .await
        .unwrap();
    m.submit(&alice, app(serde_json::json!({"gpus": 0.25})))
        .await
        .unwrap();
    let err = m
        .submit(&alice, app(serde_json::json!({"gpus": 3})))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("local: 2 GPUs"), "{err}");
    let err = m
        .submit(&alice, app(serde_json::json!({"resources": {"fpga": 1}})))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("field `resources.fpga`"), "{err}");
}

#[tokio::test]
async fn offers_and_grants_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (settings, m, admin) = test_support::open(dir.path(), &[]);
    let alice = test_support::user(&m, &admin, "alice").await;
    let reg = registration(&m, &admin).await;
    let (agent, id) = register(&m, &reg, two_gpus()).await.unwrap();
    let mut spec = app(serde_json::json!({"gpus": 1}));
    spec.tasks = hetpilot_protocol::spec::TaskSource::Array { start: 0, end: 0 };
    m.submit(&alice, spec).await.unwrap();
    let first = pull(&m, &agent, id).await;
    assert_eq!(first.tasks.len(), 1);
    let held = first.tasks[0].resources.gpus[0].uuid.clone();
    drop(m);

    let m = Manager::open(settings).unwrap();
    {
        let control = m.control();
        let restored = control.queues().agent(id).unwrap();
        assert_eq!(restored.pool().offer(), &two_gpus());
        assert_eq!(
            restored.grant(first.tasks[0].task),
            Some(&first.tasks[0].resources)
        );
    }
    m.submit(&alice, app(serde_json::json!({"gpus": 1})))
        .await
        .unwrap();
    let after = pull(&m, &agent, id).await;
    let uuids: Vec<&str> = after
        .tasks
        .iter()
        .map(|t| t.resources.gpus[0].uuid.as_str())
        .collect();
    assert_eq!(uuids.len(), 1, "one device is still held: {uuids:?}");
    assert_ne!(uuids[0], held);
}
