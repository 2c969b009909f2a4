//! Leases of an application with variants follow the variant round's quotas: only the
//! variants planned for the agent's platform, no more at once on one agent than its quota,
//! GPU first; exploration sends a planned number of tasks of a variant regardless.

use super::core::Queues;
use super::{AgentEntry, AppEntry, LeasePlan, VariantLeasePlan, VariantQuota};
use hetpilot_protocol::resources::{GpuDevice, GpuVendor, ResourceAmount, ResourceOffer};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::variants::VariantSpec;
use hetpilot_protocol::{AgentId, AppId};
use std::collections::HashMap;

const APP: AppId = AppId(1);

fn queues() -> Queues {
    let mut spec = AppSpec {
        name: "a".into(),
        command: "cpu-run {}".into(),
        tasks: TaskSource::Array { start: 0, end: 9 },
        cores: 1,
        memory_mb: 0,
        env: Default::default(),
        workdir: None,
        max_attempts: 3,
        timeout_secs: None,
        output_dir: None,
        inputs: vec![],
        outputs: vec![],
        data_intensive: false,
        dag: None,
        gpus: None,
        resources: Default::default(),
        nodes: None,
        procs: None,
        variants: Vec::new(),
    };
    spec.variants = vec![
        VariantSpec {
            name: "gpu".into(),
            command: Some("gpu-run {}".into()),
            cores: 1,
            gpus: ResourceAmount::whole(1),
        },
        VariantSpec {
            name: "cpu".into(),
            command: None,
            cores: 2,
            gpus: None,
        },
    ];
    let template = spec.validate().unwrap();
    let mut q = Queues::new(60_000);
    q.insert_app(AppEntry::new(APP, "alice".into(), spec, template, 0));
    let gpus = (0..2)
        .map(|i| GpuDevice {
            index: i,
            uuid: format!("GPU-{i}"),
            model: "fake".into(),
            memory_mib: 1024,
            vendor: GpuVendor::Nvidia,
        })
        .collect();
    let offer = ResourceOffer {
        gpus,
        named: Default::default(),
    };
    q.insert_agent(
        AgentEntry::new(AgentId(1), "gpu".into(), "n1".into(), 8, 0).with_resources(offer),
    );
    q
}

fn plan(quotas: Vec<VariantQuota>, explore: Vec<(AppId, usize, u32)>) -> LeasePlan {
    LeasePlan {
        variants: VariantLeasePlan {
            quotas: HashMap::from([(APP, HashMap::from([("gpu".to_string(), quotas)]))]),
            explore: HashMap::from([("gpu".to_string(), explore)]),
        },
        ..LeasePlan::default()
    }
}

fn leased_variants(q: &mut Queues, now_ms: u64) -> Vec<Option<String>> {
    q.lease(AgentId(1), 8, now_ms).unwrap().variants
}

#[test]
fn leases_keep_to_the_planned_variants_and_their_quota() {
    let mut q = queues();
    // Planned: one GPU task at most, then CPU tasks; the agent has two GPUs.
    q.set_plan(plan(
        vec![
            VariantQuota {
                variant: 0,
                per_agent: 1,
            },
            VariantQuota {
                variant: 1,
                per_agent: 2,
            },
        ],
        vec![],
    ));
    let v = leased_variants(&mut q, 1);
    assert_eq!(
        v,
        vec![Some("gpu".into()), Some("cpu".into()), Some("cpu".into())]
    );
    // 1 + 2 + 2 cores held: the variants' own cores count against the slots.
    assert_eq!(q.free_slots_of(AgentId(1)), Some(3));
}

#[test]
fn a_variant_the_plan_leaves_out_is_not_leased_except_to_explore_it() {
    let mut q = queues();
    let cpu_only = vec![VariantQuota {
        variant: 1,
        per_agent: 4,
    }];
    q.set_plan(plan(cpu_only.clone(), vec![]));
    let v = leased_variants(&mut q, 1);
    assert_eq!(v, vec![Some("cpu".into()); 4], "free GPUs stay free");
    let mut q = queues();
    q.set_plan(plan(cpu_only, vec![(APP, 0, 1)]));
    let batch = q.lease(AgentId(1), 8, 1).unwrap();
    assert_eq!(batch.variants[0].as_deref(), Some("gpu"));
    assert_eq!(batch.tasks[0].argv, vec!["gpu-run", "0"]);
    assert_eq!(batch.tasks[0].resources.gpus.len(), 1);
    assert_eq!(
        batch.variants[1..].to_vec(),
        vec![Some("cpu".to_string()); 3],
        "one exploration task only"
    );
}
