//! Applications with variants through the service: a lease's variant (its cores and GPU)
//! is stored and survives a restart, and hostile variants are refused naming the field.

use super::*;
use hetpilot_protocol::protocol::{PullRequest, RegisterRequest};
use hetpilot_protocol::resources::{GpuDevice, GpuVendor, ResourceOffer};
use hetpilot_protocol::spec::AppSpec;
use hetpilot_protocol::AgentId;
use test_support::registration;

async fn register(
    m: &Manager,
    registration: &Principal,
    gpus: u32,
) -> Result<(Principal, AgentId), ServiceError> {
    let resources = ResourceOffer {
        gpus: (0..gpus)
            .map(|i| GpuDevice {
                index: i,
                uuid: format!("GPU-{i}"),
                model: "NVIDIA H100 80GB HBM3".into(),
                memory_mib: 81_559,
                vendor: GpuVendor::Nvidia,
            })
            .collect(),
        named: Default::default(),
    };
    let r = m
        .register(
            registration,
            None,
            RegisterRequest {
                cores: 8,
                resources,
                ..super::test_support::local_request("node1")
            },
        )
        .await?;
    Ok((m.authenticate(Some(&r.credential)).unwrap(), r.agent))
}

fn app(variants: serde_json::Value) -> AppSpec {
    serde_json::from_value(serde_json::json!({
        "name": "train", "command": "cpu-run {}",
        "tasks": {"array": {"start": 0, "end": 3}},
        "variants": variants,
    }))
    .unwrap()
}

fn gpu_and_cpu() -> serde_json::Value {
    serde_json::json!([
        {"name": "gpu", "gpus": 1, "command": "gpu-run {}"},
        {"name": "cpu", "cores": 3},
    ])
}

#[tokio::test]
async fn a_leased_variant_is_stored_and_held_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (settings, m, admin) = test_support::open(dir.path(), &[]);
    let alice = test_support::user(&m, &admin, "alice").await;
    let reg = registration(&m, &admin).await;
    let (agent, id) = register(&m, &reg, 1).await.unwrap();
    let app_id = m.submit(&alice, app(gpu_and_cpu())).await.unwrap().app;
    let req = PullRequest {
        max: 8,
        wait_ms: 0,
        started: vec![],
    };
    let first = m.pull(&agent, id, req.clone()).await.unwrap();
    // One GPU task (1 core), then CPU tasks of 3 cores while 7 cores are free: 2 of them.
    let argv: Vec<&str> = first.tasks.iter().map(|t| t.argv[0].as_str()).collect();
    assert_eq!(argv, ["gpu-run", "cpu-run", "cpu-run"]);
    let free = m.control().queues().free_slots_of(id);
    assert_eq!(free, Some(1));
    drop(m);

    let m = Manager::open(settings).unwrap();
    {
        let control = m.control();
        let app = control.queues().app(app_id).unwrap();
        let variants: Vec<Option<u8>> = (0..3).map(|i| app.task(i).unwrap().variant).collect();
        assert_eq!(variants, [Some(0), Some(1), Some(1)]);
        assert_eq!(app.held_cores(1), 3);
        assert_eq!(control.queues().free_slots_of(id), free);
    }
    let (_, history) = m.task(&alice, first.tasks[0].task).await.unwrap();
    assert_eq!(history[0].variant.as_deref(), Some("gpu"));
    // The last task needs 1 core as a GPU task, but the GPU is held: nothing fits.
    let after = m.pull(&agent, id, req).await.unwrap();
    assert!(after.tasks.is_empty(), "{:?}", after.tasks);
}

#[tokio::test]
async fn hostile_variants_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let (_, m, admin) = test_support::open(dir.path(), &[]);
    let alice = test_support::user(&m, &admin, "alice").await;
    let reg = registration(&m, &admin).await;
    register(&m, &reg, 0).await.unwrap();
    let gpu_only = serde_json::json!([{"name": "one", "gpus": 1}]);
    let err = m
        .submit(&alice, app(gpu_only))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("field `variants`: no platform offers what any variant asks for"),
        "{err}"
    );
    // A GPU variant beside one every node can run is fine: it is simply never chosen here.
    assert!(m.submit(&alice, app(gpu_and_cpu())).await.is_ok());
    let huge = serde_json::json!([{"name": "cpu", "cores": u32::MAX}]);
    let err = m.submit(&alice, app(huge)).await.unwrap_err().to_string();
    assert!(
        err.starts_with("field `variants`: variant `cpu`: 4294967295 cores"),
        "{err}"
    );
}
