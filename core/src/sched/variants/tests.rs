//! The variant first level on the GPU-speedup case: three applications whose GPU variant
//! is 2×, 10× and 40× faster than their 8-core CPU variant, two GPU nodes beside CPU nodes.

use hetpilot_protocol::resources::ResourceAmount;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::sched::settings::SchedulerSettings;
use crate::sched::FirstLevel;

fn platforms() -> Vec<VariantPlatform> {
    vec![
        VariantPlatform {
            name: "gpu".into(),
            nodes: 2,
            cores_per_node: 32,
            gpus_per_node: 4,
        },
        VariantPlatform {
            name: "cpu".into(),
            nodes: 4,
            cores_per_node: 32,
            gpus_per_node: 0,
        },
    ]
}

fn gpu_variant() -> Variant {
    Variant {
        name: "gpu".into(),
        cores: 1,
        gpus: ResourceAmount::whole(1).unwrap(),
    }
}

fn cpu_variant() -> Variant {
    Variant {
        name: "cpu".into(),
        cores: 8,
        gpus: ResourceAmount::default(),
    }
}

/// An application with the GPU variant declared first, `speedup`× faster than the CPU one.
fn app(name: &str, speedup: f64) -> VariantApplication {
    VariantApplication {
        name: name.into(),
        variants: vec![gpu_variant(), cpu_variant()],
        runtime_s: vec![vec![800.0 / speedup; 2], vec![800.0; 2]],
        remaining_tasks: 1_000,
        completed_tasks: 0,
        age_s: 0.0,
        weight: 1.0,
    }
}

fn plan(first_level: &str, apps: &[VariantApplication]) -> VariantPlan {
    let scheduler = VariantScheduler::new(SchedulerSettings {
        first_level: first_level.parse().unwrap(),
        ..Default::default()
    })
    .unwrap();
    let platforms = platforms();
    let snapshot = VariantSnapshot {
        platforms: &platforms,
        applications: apps,
    };
    scheduler
        .plan(&snapshot, &mut ChaCha8Rng::seed_from_u64(7))
        .unwrap()
}

#[test]
fn provider_affinity_first_gives_every_gpu_to_the_application_that_gains_most() {
    // In any order of the applications.
    for order in [[2.0, 10.0, 40.0], [40.0, 2.0, 10.0], [10.0, 40.0, 2.0]] {
        let apps: Vec<_> = order.iter().map(|&s| app(&format!("{s}x"), s)).collect();
        let p = plan("paf", &apps);
        let gpu: Vec<u64> = (0..3).map(|a| p.gpu_slots(a)).collect();
        let best = order.iter().position(|&s| s == 40.0).unwrap();
        assert_eq!(gpu[best], 8, "{order:?}: {gpu:?}");
        assert_eq!(gpu.iter().sum::<u64>(), 8, "{order:?}: {gpu:?}");
        // Its GPU tasks run the GPU variant, and every slot is handed out.
        assert_eq!(
            p.variants_on(best, 0)[0],
            (0, 8),
            "{:?}",
            p.variants_on(best, 0)
        );
        let used: u64 = p.slots.iter().flatten().sum();
        assert_eq!(used, p.capacity.iter().sum::<u64>(), "{:?}", p.slots);
    }
}

#[test]
fn affinity_policies_keep_the_gpus_from_the_application_that_gains_least() {
    // Reciprocal affinity ranks the 2x application's CPU columns above its GPU column.
    let apps = [app("2x", 2.0), app("10x", 10.0), app("40x", 40.0)];
    for first in ["paf", "aaf", "pa-rr"] {
        let p = plan(first, &apps);
        assert_eq!(p.gpu_slots(0), 0, "{first}: {:?}", p.slots);
        assert!(p.gpu_slots(2) >= p.gpu_slots(1), "{first}: {:?}", p.slots);
    }
}

#[test]
fn no_policy_puts_a_variant_where_it_does_not_fit() {
    let mut cpu_only = app("cpu-only", 1.0);
    cpu_only.variants = vec![cpu_variant()];
    cpu_only.runtime_s = vec![vec![800.0; 2]];
    let mut gpu_only = app("gpu-only", 40.0);
    gpu_only.variants = vec![gpu_variant()];
    gpu_only.runtime_s = vec![vec![20.0; 2]];
    let apps = [cpu_only, gpu_only, app("2x", 2.0)];
    for first in FirstLevel::ALL {
        let p = plan(first.as_str(), &apps);
        for (c, col) in p.columns.iter().enumerate() {
            match (col.kind, col.platform) {
                (VariantKind::Gpu, _) => assert_eq!(p.slots[0][c], 0, "{first}: {:?}", p.slots),
                (VariantKind::Cpu, _) => assert_eq!(p.slots[1][c], 0, "{first}: {:?}", p.slots),
            }
            let used: u64 = p.slots.iter().map(|r| r[c]).sum();
            assert!(used <= p.capacity[c], "{first}: column {c}");
        }
        // The GPU-only application has a GPU slot under every policy.
        assert!(p.gpu_slots(1) > 0, "{first}: {:?}", p.slots);
    }
}

#[test]
fn unused_gpu_slots_give_their_cores_to_the_cpu_column() {
    let mut one = app("one-gpu-task", 40.0);
    one.remaining_tasks = 1;
    let apps = [one, {
        let mut cpu = app("cpu", 1.0);
        cpu.variants = vec![cpu_variant()];
        cpu.runtime_s = vec![vec![800.0; 2]];
        cpu
    }];
    let p = plan("paf", &apps);
    let gpu_cpu_column = p
        .columns
        .iter()
        .position(|c| c.platform == 0 && c.kind == VariantKind::Cpu)
        .unwrap();
    // One GPU slot holds 1 core: 31 + 32 cores are left, 3 + 4 slots of 8.
    assert_eq!(p.capacity[gpu_cpu_column], 7, "{:?}", p.capacity);
    assert_eq!(p.gpu_slots(0), 1);
}

#[test]
fn hostile_snapshots_are_refused_with_the_field_named() {
    let platforms = platforms();
    let scheduler = VariantScheduler::new(SchedulerSettings::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    type Spoil = Box<dyn Fn(&mut VariantApplication)>;
    let cases: Vec<(Spoil, &str)> = vec![
        (
            Box::new(|a| a.runtime_s[0][1] = f64::NAN),
            "runtime_s[0][1]",
        ),
        (Box::new(|a| a.runtime_s[1][0] = -3.0), "runtime_s[1][0]"),
        (
            Box::new(|a| a.runtime_s.pop().map(drop).unwrap_or(())),
            "runtime_s",
        ),
        (Box::new(|a| a.variants[0].cores = 0), "variants[0].cores"),
        (Box::new(|a| a.variants.clear()), "variants"),
        (Box::new(|a| a.variants[0] = cpu_variant()), "variants"),
        (Box::new(|a| a.weight = f64::INFINITY), "weight"),
        (Box::new(|a| a.age_s = -1.0), "age_s"),
    ];
    for (spoil, field) in cases {
        let mut bad = app("bad", 2.0);
        spoil(&mut bad);
        let apps = [bad];
        let snapshot = VariantSnapshot {
            platforms: &platforms,
            applications: &apps,
        };
        let err = scheduler.plan(&snapshot, &mut rng).unwrap_err().to_string();
        assert!(
            err.contains(&format!("applications[0].{field}")),
            "{field}: {err}"
        );
    }
}
