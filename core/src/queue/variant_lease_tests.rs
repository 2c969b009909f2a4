//! Leases of an application with variants follow the variant round's quotas: only the
//! variants planned for the agent's platform, no more at once on one agent than its quota,
//! GPU first; exploration sends a planned number of tasks of a variant regardless.

use super::queues::Queues;
use super::{AgentEntry, LeasePlan, VariantLeasePlan, VariantQuota};
use crate::test_apps::{alice_entry, array_app, gpu_and_cpu_variants, gpu_offer};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::{AgentId, AppId};
use std::collections::HashMap;

const APP: AppId = AppId(1);

fn queues() -> Queues {
    let spec = AppSpec {
        command: "cpu-run {}".into(),
        tasks: TaskSource::Array { start: 0, end: 9 },
        variants: gpu_and_cpu_variants(),
        ..array_app("a", 1)
    };
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(APP, spec));
    q.insert_agent(
        AgentEntry::new(AgentId(1), "gpu".into(), "n1".into(), 8, 0).with_resources(gpu_offer(2)),
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
