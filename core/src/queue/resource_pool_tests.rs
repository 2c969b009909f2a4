use super::*;
use crate::test_apps::gpu_offer;
use proptest::prelude::*;

fn offer(gpus: u32, licenses: u64) -> ResourceOffer {
    ResourceOffer {
        named: [(
            "licenses".to_string(),
            ResourceAmount::whole(licenses).unwrap(),
        )]
        .into(),
        ..gpu_offer(gpus)
    }
}

fn gpus(units: u64) -> ResourceRequest {
    ResourceRequest([(GPUS.to_string(), ResourceAmount::from_units(units).unwrap())].into())
}

#[test]
fn whole_devices_are_free_ones_and_shares_pack_best_fit() {
    let mut pool = ResourcePool::new(offer(3, 0));
    let two = pool.take(&gpus(20_000)).unwrap();
    assert_eq!(
        two.gpus.iter().map(|g| g.uuid.as_str()).collect::<Vec<_>>(),
        ["GPU-0", "GPU-1"]
    );
    assert!(pool.take(&gpus(20_000)).is_none(), "one device is left");
    let quarter = pool.take(&gpus(2_500)).unwrap();
    assert_eq!(quarter.gpus[0].index, 2);
    // A whole device is no longer free: GPU-2 holds a share.
    assert!(pool.take(&gpus(10_000)).is_none());
    pool.release(&two);
    // Best fit: the next share goes beside the first, not on an empty device.
    let half = pool.take(&gpus(5_000)).unwrap();
    assert_eq!(half.gpus[0].index, 2);
    // 0.25 + 0.5 leave 0.25 on GPU-2: a 0.5 share goes to the emptier device.
    let other = pool.take(&gpus(5_000)).unwrap();
    assert_eq!(other.gpus[0].index, 0);
    let last = pool.take(&gpus(2_500)).unwrap();
    assert_eq!(last.gpus[0].index, 2, "the fullest device that fits");
    let used: Vec<_> = pool.gpu_use().map(|(_, a)| a.units()).collect();
    assert_eq!(used, [5_000, 0, 10_000]);
}

#[test]
fn named_counts_subtract_and_unknown_names_never_fit() {
    let mut pool = ResourcePool::new(offer(0, 2));
    let lic =
        |n| ResourceRequest([("licenses".to_string(), ResourceAmount::whole(n).unwrap())].into());
    let a = pool.take(&lic(1)).unwrap();
    assert!(pool.take(&lic(2)).is_none());
    assert_eq!(
        pool.named_use("licenses"),
        ResourceAmount::whole(1).unwrap()
    );
    pool.release(&a);
    assert!(pool.take(&lic(2)).is_some());
    let fpga = ResourceRequest([("fpga".to_string(), ResourceAmount::whole(1).unwrap())].into());
    assert!(pool.take(&fpga).is_none());
    assert!(!pool.could_grant(&fpga));
    assert!(!pool.could_grant(&gpus(1)), "no GPU at all");
    assert!(pool.could_grant(&lic(2)) && !pool.could_grant(&lic(3)));
    // A failed take takes nothing, not even the parts that fit.
    let mixed = ResourceRequest(
        [
            ("licenses".to_string(), ResourceAmount::whole(1).unwrap()),
            (GPUS.to_string(), ResourceAmount::whole(1).unwrap()),
        ]
        .into(),
    );
    let mut fresh = ResourcePool::new(offer(0, 2));
    assert!(fresh.take(&mixed).is_none());
    assert!(fresh.named_use("licenses").is_zero());
}

#[derive(Debug, Clone)]
enum Op {
    /// Take this many ten-thousandths of GPU (whole devices when at least 1) and licences.
    Take { gpu_units: u64, licenses: u64 },
    /// Release the held grant at this position (modulo how many are held).
    Release(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (
            prop_oneof![
                1u64..10_000,
                (1u64..=4).prop_map(|n| n * 10_000),
                Just(0u64),
                Just(2_500u64),
                Just(5_000u64),
            ],
            0u64..3
        )
            .prop_map(|(gpu_units, licenses)| Op::Take {
                gpu_units,
                licenses
            }),
        2 => any::<usize>().prop_map(Op::Release),
    ]
}

proptest! {
    /// Random takes and releases never oversubscribe a device or a count, whole-device
    /// grants never share their device, and what the grants hold is what the pool counts.
    #[test]
    fn random_takes_and_releases_never_oversubscribe(
        devices in 0u32..5,
        licenses in 0u64..4,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let mut pool = ResourcePool::new(offer(devices, licenses));
        let mut held: Vec<ResourceGrant> = Vec::new();
        for op in ops {
            match op {
                Op::Take { gpu_units, licenses } => {
                    let mut req = ResourceRequest::default();
                    if gpu_units > 0 {
                        req.0.insert(GPUS.into(), ResourceAmount::from_units(gpu_units).unwrap());
                    }
                    if licenses > 0 {
                        req.0.insert("licenses".into(), ResourceAmount::whole(licenses).unwrap());
                    }
                    if let Some(g) = pool.take(&req) {
                        let granted: u64 = g.gpus.iter().map(|s| s.amount.units()).sum();
                        prop_assert_eq!(granted, gpu_units);
                        held.push(g);
                    }
                }
                Op::Release(i) if !held.is_empty() => {
                    let g = held.remove(i % held.len());
                    pool.release(&g);
                }
                Op::Release(_) => {}
            }
            let mut per_device = vec![0u64; devices as usize];
            let mut whole_holders = vec![0u32; devices as usize];
            let mut holders = vec![0u32; devices as usize];
            let mut lic = 0u64;
            for g in &held {
                for s in &g.gpus {
                    per_device[s.index as usize] += s.amount.units();
                    holders[s.index as usize] += 1;
                    if s.amount.is_whole() {
                        whole_holders[s.index as usize] += 1;
                    }
                }
                lic += g.named.get("licenses").map_or(0, |a| a.units());
            }
            for (i, used) in pool.gpu_use() {
                let i = i as usize;
                prop_assert!(per_device[i] <= ResourceAmount::UNIT, "device {} at {}", i, per_device[i]);
                prop_assert_eq!(used.units(), per_device[i]);
                prop_assert!(whole_holders[i] == 0 || holders[i] == 1);
            }
            prop_assert!(lic <= licenses * ResourceAmount::UNIT);
            prop_assert_eq!(pool.named_use("licenses").units(), lic);
        }
    }
}
