//! Leases take GPUs and named counts from their agent's pool and give them back when the
//! run ends, is lost, or its agent is; a restart rebuilds the pool from the recorded grants.

use super::*;
use crate::test_apps::{alice_entry, array_app, gpu_offer, success};
use hetpilot_protocol::dag::{DagSpec, DagTask};
use hetpilot_protocol::protocol::Outcome;
use hetpilot_protocol::resources::{ResourceAmount, ResourceGrant, ResourceOffer};
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::{AgentId, AppId, TaskRef};
use std::collections::HashMap;

fn amount(x: f64) -> ResourceAmount {
    ResourceAmount::parse(x).unwrap()
}

fn spec(n: u64, gpus: Option<f64>) -> AppSpec {
    AppSpec {
        gpus: gpus.map(amount),
        ..array_app("a", n)
    }
}

fn agent(id: u64, slots: u32, offer: ResourceOffer) -> AgentEntry {
    AgentEntry::new(AgentId(id), "gpu".into(), "h".into(), slots, 0).with_resources(offer)
}

/// The devices (uuid, share) each leased task got.
fn devices(batch: &LeaseBatch) -> Vec<Vec<(String, ResourceAmount)>> {
    batch
        .tasks
        .iter()
        .map(|t| {
            t.resources
                .gpus
                .iter()
                .map(|g| (g.uuid.clone(), g.amount))
                .collect()
        })
        .collect()
}

#[test]
fn whole_gpu_tasks_get_different_devices_and_wait_for_a_free_one() {
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec(3, Some(1.0))));
    q.insert_agent(agent(1, 8, gpu_offer(2)));
    let batch = q.lease(AgentId(1), 8, 0).unwrap();
    assert_eq!(
        devices(&batch),
        [
            vec![("GPU-0".to_string(), amount(1.0))],
            vec![("GPU-1".to_string(), amount(1.0))]
        ]
    );
    // The grant is recorded with the lease, for the store.
    assert!(batch.changes.iter().any(|c| matches!(
        c,
        Change::Leased { resources, .. } if resources.gpus.len() == 1
    )));
    assert!(q.lease(AgentId(1), 8, 1).unwrap().tasks.is_empty());
    let done = batch.tasks[1].task;
    q.apply_result(AgentId(1), success(done, 1));
    let next = q.lease(AgentId(1), 8, 2).unwrap();
    assert_eq!(devices(&next), [vec![("GPU-1".to_string(), amount(1.0))]]);
}

#[test]
fn half_gpu_tasks_share_two_devices_two_by_two() {
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec(5, Some(0.5))));
    q.insert_agent(agent(1, 8, gpu_offer(2)));
    let batch = q.lease(AgentId(1), 8, 0).unwrap();
    let mut per_device: HashMap<String, u64> = HashMap::new();
    for d in devices(&batch) {
        assert_eq!(d.len(), 1);
        *per_device.entry(d[0].0.clone()).or_default() += d[0].1.units();
    }
    assert_eq!(batch.tasks.len(), 4, "the fifth share finds no room");
    assert_eq!(per_device.len(), 2);
    assert!(per_device.values().all(|&u| u == ResourceAmount::UNIT));
}

/// App 1 holds half of GPU-0; where does a half-GPU task of app 2 go under `devices`?
fn second_half_goes_to(devices_plan: DevicePlan) -> String {
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec(1, Some(0.5))));
    q.insert_agent(agent(1, 8, gpu_offer(2)));
    let first = q.lease(AgentId(1), 1, 0).unwrap();
    assert_eq!(devices(&first), [vec![("GPU-0".to_string(), amount(0.5))]]);
    q.insert_app(alice_entry(AppId(2), spec(1, Some(0.5))));
    q.set_plan(LeasePlan {
        devices: devices_plan,
        ..LeasePlan::default()
    });
    let second = q.lease(AgentId(1), 1, 1).unwrap();
    let got = devices(&second);
    assert_eq!(got.len(), 1, "{got:?}");
    got[0][0].0.clone()
}

#[test]
fn a_gpu_fraction_goes_where_its_measured_device_co_runners_slow_it_least() {
    // Before any round: best fit packs the halves on one device.
    assert_eq!(second_half_goes_to(DevicePlan::default()), "GPU-0");
    let measured = |slowdown: f64| DevicePlan {
        policy: Some(crate::sched::SecondLevel::Maf),
        slowdowns: HashMap::from([(
            "gpu".to_string(),
            HashMap::from([
                ((AppId(2), vec![]), 1.0),
                ((AppId(2), vec![AppId(1)]), slowdown),
            ]),
        )]),
    };
    // App 2 runs 2.5x slower next to app 1: it takes the other device.
    assert_eq!(second_half_goes_to(measured(2.5)), "GPU-1");
    // Measured harmless: the halves still pack.
    assert_eq!(second_half_goes_to(measured(1.0)), "GPU-0");
}

#[test]
fn gpu_tasks_never_go_to_agents_without_gpus_and_named_counts_subtract() {
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec(2, Some(1.0))));
    let mut fpga = spec(3, None);
    fpga.resources.insert("fpga".into(), amount(1.0));
    q.insert_app(alice_entry(AppId(2), fpga));
    q.insert_agent(agent(1, 8, ResourceOffer::default()));
    let offer = ResourceOffer {
        named: [("fpga".to_string(), amount(2.0))].into(),
        ..ResourceOffer::default()
    };
    q.insert_agent(agent(2, 8, offer));
    assert!(q.lease(AgentId(1), 8, 0).unwrap().tasks.is_empty());
    let batch = q.lease(AgentId(2), 8, 0).unwrap();
    assert_eq!(batch.tasks.len(), 2, "two fpga tasks, no GPU task");
    assert!(batch
        .tasks
        .iter()
        .all(|t| t.task.app == AppId(2) && t.resources.named["fpga"] == amount(1.0)));
}

#[test]
fn a_lost_agent_and_a_cancelled_run_give_their_devices_back() {
    let mut q = Queues::new(1_000);
    q.insert_app(alice_entry(AppId(1), spec(4, Some(1.0))));
    q.insert_agent(agent(1, 4, gpu_offer(1)));
    let first = q.lease(AgentId(1), 4, 0).unwrap();
    assert_eq!(first.tasks.len(), 1);
    // The agent is lost: its device is free for the next agent that registers there.
    q.expire(5_000);
    let pool = q.agent(AgentId(1)).unwrap().pool();
    assert!(pool.gpu_use().all(|(_, used)| used.is_zero()));
    q.insert_agent(agent(2, 4, gpu_offer(1)));
    let second = q.lease(AgentId(2), 4, 5_000).unwrap();
    assert_eq!(second.tasks.len(), 1);
    // Cancelled: the device stays held until the killed run reports, then it is free.
    q.cancel(AppId(1));
    let t = second.tasks[0].task;
    assert!(q.agent(AgentId(2)).unwrap().grant(t).is_some());
    let mut killed = success(t, second.tasks[0].attempt);
    killed.outcome = Outcome::Signaled;
    q.apply_result(AgentId(2), killed);
    let pool = q.agent(AgentId(2)).unwrap().pool();
    assert!(pool.gpu_use().all(|(_, used)| used.is_zero()));
    assert!(q.agent(AgentId(2)).unwrap().grant(t).is_none());
}

#[test]
fn a_restart_rebuilds_the_pool_from_the_recorded_grants() {
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec(3, Some(1.0))));
    q.insert_agent(agent(1, 4, gpu_offer(2)));
    let batch = q.lease(AgentId(1), 1, 0).unwrap();
    let held = batch.tasks[0].task;
    // The store gives back the tasks' states and the grant recorded with the lease.
    let grants: HashMap<TaskRef, ResourceGrant> = batch
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::Leased { at, resources, .. } => Some((at.task, resources.clone())),
            _ => None,
        })
        .collect();
    let mut app = alice_entry(AppId(1), spec(3, Some(1.0)));
    app.tasks = q.app(AppId(1)).unwrap().tasks.clone();
    let mut restarted = Queues::new(60_000);
    restarted.insert_app(app);
    restarted.insert_agent(agent(1, 4, gpu_offer(2)));
    restarted.reattach_leases(&grants);
    assert_eq!(
        restarted.agent(AgentId(1)).unwrap().grant(held),
        Some(&batch.tasks[0].resources)
    );
    let after = restarted.lease(AgentId(1), 4, 10).unwrap();
    let held_uuid = batch.tasks[0].resources.gpus[0].uuid.clone();
    assert_eq!(after.tasks.len(), 1, "one device is still held");
    assert_ne!(after.tasks[0].resources.gpus[0].uuid, held_uuid);
}

#[test]
fn cpu_tasks_leave_a_gpu_agent_the_cores_its_waiting_gpu_tasks_need() {
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), spec(100, None)));
    q.insert_app(alice_entry(AppId(2), spec(2, Some(1.0))));
    q.insert_agent(agent(1, 4, gpu_offer(2)));
    // Ask for CPU work alone first (the plan's order): two cores stay for the GPU tasks.
    let mut remaining = 4;
    let mut batch = LeaseBatch::default();
    while q.lease_one(AgentId(1), AppId(1), &mut remaining, 0, &mut batch) > 0 {}
    assert_eq!(batch.tasks.len(), 2);
    let rest = q.lease(AgentId(1), 4, 1).unwrap();
    assert_eq!(rest.tasks.len(), 2);
    assert!(rest.tasks.iter().all(|t| t.task.app == AppId(2)));
    // With no GPU work waiting, CPU work may use every core.
    let mut cpu_only = Queues::new(60_000);
    cpu_only.insert_app(alice_entry(AppId(1), spec(100, None)));
    cpu_only.insert_agent(agent(1, 4, gpu_offer(2)));
    assert_eq!(cpu_only.lease(AgentId(1), 4, 0).unwrap().tasks.len(), 4);
}

#[test]
fn a_workflow_task_takes_its_own_gpus() {
    let mut wf = spec(0, None);
    wf.tasks = TaskSource::Lines(vec!["prep".into(), "train".into()]);
    let train = DagTask {
        gpus: Some(amount(1.0)),
        ..DagTask::default()
    };
    wf.dag = Some(DagSpec {
        tasks: vec![DagTask::default(), train],
    });
    let mut q = Queues::new(60_000);
    q.insert_app(alice_entry(AppId(1), wf));
    q.insert_agent(agent(1, 4, gpu_offer(1)));
    let batch = q.lease(AgentId(1), 4, 0).unwrap();
    let granted: Vec<(u64, usize)> = batch
        .tasks
        .iter()
        .map(|t| (t.task.index, t.resources.gpus.len()))
        .collect();
    assert_eq!(granted, [(0, 0), (1, 1)]);
}
