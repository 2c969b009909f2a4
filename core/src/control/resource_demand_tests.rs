//! The provisioning demand through the whole control plane sees what each application
//! requests besides cores: GPU work asks for pilots of the GPU platform only, and CPU
//! work never for it while a CPU platform has room.

use super::*;
use crate::control::resource_fit::NodeResources;
use crate::test_apps::{array_app, control_settings, control_with};
use hetpilot_protocol::resources::ResourceAmount;

fn app(name: &str, n: u64, gpus: Option<f64>) -> AppSpec {
    AppSpec {
        max_attempts: 1,
        gpus: gpus.map(|g| ResourceAmount::parse(g).unwrap()),
        ..array_app(name, n)
    }
}

/// A control plane on a CPU platform and a GPU one, each of two 8-core nodes (4 GPUs
/// each on the GPU platform), to which `user{i}` submitted `apps[i]`.
fn control_on_cpu_and_gpu(apps: Vec<AppSpec>) -> Control {
    let mut c = control_with(&control_settings(), apps);
    let capacity = |gpus| Capacity {
        nodes: 2,
        cores_per_node: 8,
        resources: NodeResources {
            gpus,
            named: Default::default(),
        },
    };
    c.use_profiles(
        BTreeMap::from([
            ("cpu".to_string(), StagingProfile::default()),
            ("gpu".to_string(), StagingProfile::default()),
        ]),
        BTreeMap::from([
            ("cpu".to_string(), capacity(0)),
            ("gpu".to_string(), capacity(4)),
        ]),
    );
    c
}

#[test]
fn gpu_work_asks_for_gpu_pilots_and_cpu_work_for_cpu_pilots() {
    let mut c = control_on_cpu_and_gpu(vec![app("train", 8, Some(1.0)), app("sweep", 40, None)]);
    let job = c.begin_round(&HashSet::new(), 1_000).unwrap();
    let warnings = c.finish_round(job.run());
    assert!(warnings.round.is_none(), "{:?}", warnings.round);
    let gpu = c.demand_by_user("gpu");
    let cpu = c.demand_by_user("cpu");
    assert!(gpu.get("user0").is_some_and(|&d| d > 0), "gpu: {gpu:?}");
    assert!(
        !gpu.contains_key("user1"),
        "CPU work on the GPU platform: {gpu:?}"
    );
    assert!(
        !cpu.contains_key("user0"),
        "GPU work on the CPU platform: {cpu:?}"
    );
    assert!(cpu.get("user1").is_some_and(|&d| d > 0), "cpu: {cpu:?}");
}

#[test]
fn work_with_a_gpu_and_a_cpu_variant_asks_for_pilots_where_either_fits() {
    let mut spec = app("train", 40, None);
    spec.variants = vec![
        hetpilot_protocol::variants::VariantSpec {
            name: "gpu".into(),
            command: None,
            cores: 1,
            gpus: ResourceAmount::whole(1),
        },
        hetpilot_protocol::variants::VariantSpec {
            name: "cpu".into(),
            command: None,
            cores: 4,
            gpus: None,
        },
    ];
    let mut c = control_on_cpu_and_gpu(vec![spec]);
    let job = c.begin_round(&HashSet::new(), 1_000).unwrap();
    let warnings = c.finish_round(job.run());
    assert!(warnings.demand.is_none(), "{:?}", warnings.demand);
    for platform in ["gpu", "cpu"] {
        let demand = c.demand_by_user(platform);
        assert!(
            demand.get("user0").is_some_and(|&d| d > 0),
            "no pilots asked on {platform}: {demand:?}"
        );
    }
}
