//! The shadow time against a brute-force replay of an agent, and EASY's promise: runs
//! admitted because they do not delay a reservation never start it later than its
//! shadow time, and never hold a slot it needs.

use super::*;
use hetpilot_protocol::resources::ResourceOffer;
use proptest::prelude::*;

fn cpu_pool() -> ResourcePool {
    ResourcePool::new(ResourceOffer::default())
}

fn started(cores: u32, end_ms: Option<u64>) -> HeldRun<'static> {
    HeldRun {
        cores,
        grant: None,
        phase: Phase::Started { end_ms },
    }
}

fn queued(cores: u32, len_ms: Option<u64>) -> HeldRun<'static> {
    HeldRun {
        cores,
        grant: None,
        phase: Phase::Queued { len_ms },
    }
}

/// Replays the agent millisecond by millisecond up to `horizon`: started runs end at
/// their ends, queued ones start in order when their cores are free. Returns the first
/// millisecond at which the held runs leave `need` slots, and asserts that the runs
/// executing never take more than the agent's slots.
fn replay(slots: u32, runs: &[HeldRun<'_>], need: u32, horizon: u64) -> Option<u64> {
    let mut end: Vec<Option<Option<u64>>> = runs
        .iter()
        .map(|r| match r.phase {
            Phase::Started { end_ms } => Some(end_ms),
            Phase::Queued { .. } => None,
        })
        .collect();
    for t in 0..=horizon {
        let live = |e: &Option<Option<u64>>| e.is_none_or(|e| e.is_none_or(|e| e > t));
        let mut running: u32 = (0..runs.len())
            .filter(|&i| end[i].is_some() && live(&end[i]))
            .map(|i| runs[i].cores)
            .sum();
        for i in 0..runs.len() {
            if end[i].is_some() {
                continue;
            }
            if running > 0 && runs[i].cores > slots.saturating_sub(running) {
                break;
            }
            let Phase::Queued { len_ms } = runs[i].phase else {
                unreachable!()
            };
            end[i] = Some(len_ms.map(|l| t + l));
            if live(&end[i]) {
                running += runs[i].cores;
            }
        }
        assert!(
            running <= slots || runs.iter().any(|r| r.cores > slots),
            "at {t} ms runs take {running} of {slots} slots"
        );
        let outstanding: u32 = (0..runs.len())
            .filter(|&i| live(&end[i]))
            .map(|i| runs[i].cores)
            .sum();
        if slots.saturating_sub(outstanding) >= need {
            return Some(t);
        }
    }
    None
}

#[test]
fn shadow_is_the_earliest_fit_and_unknown_runs_block_it() {
    let pool = cpu_pool();
    let request = ResourceRequest::default();
    let need = |cores| Need {
        cores,
        request: &request,
    };
    let load = |runs: Vec<HeldRun<'static>>| AgentLoad {
        slots: 8,
        pool: &pool,
        runs,
    };
    let six = vec![
        started(2, Some(30)),
        started(2, Some(10)),
        started(2, Some(20)),
    ];
    assert_eq!(shadow_ms(&load(six.clone()), need(2), 0), Some(0));
    assert_eq!(shadow_ms(&load(six.clone()), need(4), 0), Some(10));
    assert_eq!(shadow_ms(&load(six.clone()), need(8), 0), Some(30));
    assert_eq!(shadow_ms(&load(six.clone()), need(9), 0), None, "too small");
    // Overdue runs end now.
    assert_eq!(shadow_ms(&load(six.clone()), need(8), 40), Some(40));
    let mut unknown = six.clone();
    unknown.push(started(1, None));
    assert_eq!(shadow_ms(&load(unknown.clone()), need(8), 0), None);
    assert_eq!(shadow_ms(&load(unknown), need(7), 0), Some(30));
    // A queued run starts at once in the two free slots and lasts 50 ms.
    let mut q = six;
    q.push(queued(2, Some(50)));
    assert_eq!(shadow_ms(&load(q.clone()), need(8), 0), Some(50));
    // Behind a run as wide as the agent, it waits until that ends (at 30).
    q.insert(3, queued(8, Some(5)));
    assert_eq!(shadow_ms(&load(q), need(8), 0), Some(85));
}

#[test]
fn easy_admits_short_runs_and_extra_slots_only() {
    let pool = cpu_pool();
    let request = ResourceRequest::default();
    let runs = vec![started(4, Some(100)), started(2, Some(50))];
    let load = AgentLoad {
        slots: 8,
        pool: &pool,
        runs,
    };
    let all = Need {
        cores: 8,
        request: &request,
    };
    // The shadow time is 100: a run of 100 ms or less fits before it.
    assert!(!delays(&load, all, queued(1, Some(100)), 0));
    assert!(delays(&load, all, queued(1, Some(101)), 0));
    assert!(delays(&load, all, queued(1, None), 0));
    // Needing 4, it starts at 50 with no slot to spare: only runs ending by 50 fit.
    let tight = AgentLoad {
        slots: 8,
        pool: &pool,
        runs: vec![started(4, Some(100)), started(3, Some(50))],
    };
    let need = |cores| Need {
        cores,
        request: &request,
    };
    assert!(delays(&tight, need(4), queued(1, Some(51)), 0));
    assert!(delays(&tight, need(4), queued(1, None), 0));
    assert!(!delays(&tight, need(4), queued(1, Some(50)), 0));
    // Needing 2, it also starts at 50, with 2 extra slots: any run fits in those.
    assert!(!delays(&tight, need(2), queued(1, None), 0));
    assert!(!delays(&tight, need(2), queued(1, Some(1_000)), 0));
    // With no shadow time (a run without an estimate holds what it needs), nothing.
    let blocked = AgentLoad {
        slots: 8,
        pool: &pool,
        runs: vec![started(4, None), started(2, Some(5))],
    };
    assert!(delays(&blocked, all, queued(1, Some(1)), 0));
}

fn run_strategy() -> impl Strategy<Value = HeldRun<'static>> {
    (
        1u32..=4,
        any::<bool>(),
        proptest::option::weighted(0.8, 0u64..40),
    )
        .prop_map(|(cores, is_started, t)| {
            if is_started {
                started(cores, t)
            } else {
                queued(cores, t.map(|l| l + 1))
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Candidates admitted one after another (each checked against the load that
    /// includes those admitted before) never start the reservation later than its
    /// shadow time before them, and the shadow time agrees with a replay of the agent.
    #[test]
    fn admitted_runs_never_delay_the_reservation(
        slots in 1u32..=8,
        need in 1u32..=8,
        held in proptest::collection::vec(run_strategy(), 0..6),
        candidates in proptest::collection::vec(
            (1u32..=3, proptest::option::weighted(0.8, 1u64..60)), 0..8),
    ) {
        prop_assume!(need <= slots);
        let started_cores: u32 = held
            .iter()
            .filter(|r| matches!(r.phase, Phase::Started { .. }))
            .map(|r| r.cores)
            .sum();
        prop_assume!(started_cores <= slots);
        let held_before = held.len();
        let pool = cpu_pool();
        let request = ResourceRequest::default();
        let want = Need { cores: need, request: &request };
        let horizon = 2_000;
        let mut load = AgentLoad { slots, pool: &pool, runs: held };
        let before = shadow_ms(&load, want, 0);
        let replayed = replay(slots, &load.runs, need, horizon);
        prop_assert_eq!(before, replayed);
        for (cores, len_ms) in candidates {
            let held: u32 = load.runs.iter().map(|r| r.cores).sum();
            if cores > slots.saturating_sub(held) {
                continue;
            }
            let candidate = queued(cores, len_ms);
            if !delays(&load, want, candidate, 0) {
                load.runs.push(candidate);
            }
        }
        let after = replay(slots, &load.runs, need, horizon);
        prop_assert_eq!(after, shadow_ms(&load, want, 0));
        if let Some(before) = before {
            prop_assert!(after.is_some_and(|a| a <= before), "{:?} > {}", after, before);
        } else {
            prop_assert_eq!(load.runs.len(), held_before, "admitted without a shadow time");
        }
    }
}
