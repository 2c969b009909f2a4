//! The gain cache against the evaluation it replaces: Algorithm 1 run with every move
//! evaluated from scratch (each candidate's removal and addition recomputed over its files,
//! every unlocked task of the heaviest node scanned) must make exactly the same moves.

use super::*;
use crate::staging::het_hps::refine::{better, refine_mapping, CANDIDATES};
use crate::staging::platforms::{four_cluster, osc_dc};
use crate::staging::workload::{Overlap, WorkloadKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What taking t off its node changes, from scratch: Exec of the node afterwards and the
/// decrease of every IO(S_p).
fn removal_from_scratch(cost: &MappingCost<'_>, t: TaskId) -> (f64, Vec<f64>) {
    let from = cost.node_of[t as usize] as usize;
    let mut exec_from = cost.exec[from] - cost.task_bytes[t as usize] * cost.local[from];
    let mut io = vec![0.0; cost.io.len()];
    let files = cost.files();
    for &f in &cost.workload.tasks[t as usize].files {
        if cost.readers[from * files + f as usize] == 1 {
            let file = &cost.workload.files[f as usize];
            let size = file.size_bytes as f64;
            exec_from -= size * cost.transfer[from][file.storage as usize];
            io[file.storage as usize] +=
                size * cost.storage_seconds_per_byte[file.storage as usize];
        }
    }
    (exec_from, io)
}

/// The effect of moving t to `to`, from scratch.
fn effect_from_scratch(
    cost: &MappingCost<'_>,
    t: TaskId,
    to: u32,
    others_max: f64,
    (exec_from, leave_io): &(f64, Vec<f64>),
) -> MoveEffect {
    let to = to as usize;
    let mut add = cost.task_bytes[t as usize] * cost.local[to];
    let mut add_io = vec![0f32; cost.io.len()];
    let files = cost.files();
    for &f in &cost.workload.tasks[t as usize].files {
        if cost.readers[to * files + f as usize] == 0 {
            let file = &cost.workload.files[f as usize];
            let size = file.size_bytes as f64;
            add += size * cost.transfer[to][file.storage as usize];
            add_io[file.storage as usize] +=
                (size * cost.storage_seconds_per_byte[file.storage as usize]) as f32;
        }
    }
    let exec_to = cost.exec[to] + add;
    let io_max = (0..cost.io.len())
        .map(|p| cost.io[p] - leave_io[p] + add_io[p] as f64)
        .fold(f64::NEG_INFINITY, f64::max);
    MoveEffect {
        objective: others_max.max(*exec_from).max(exec_to) + io_max,
        exec_from: *exec_from,
        exec_to,
    }
}

/// Algorithm 1 as `refine_mapping` runs it, every evaluation from scratch.
fn refine_from_scratch(cost: &mut MappingCost<'_>, nodes: usize) -> (f64, f64) {
    let tasks = cost.node_of.len();
    let initial = cost.objective();
    let mut best = initial;
    for _ in 0..100 {
        let pass_start = best;
        let mut locked = vec![false; tasks];
        let mut tentative: Vec<(TaskId, u32)> = Vec::new();
        let (mut improved, mut fruitless) = (false, 0);
        let mut s = cost.heaviest_node();
        loop {
            let candidates: Vec<TaskId> = (0..tasks as TaskId)
                .filter(|&t| !locked[t as usize] && cost.node_of[t as usize] == s)
                .collect();
            let removals: Vec<_> = candidates
                .iter()
                .map(|&t| removal_from_scratch(cost, t))
                .collect();
            let mut chosen: Option<(TaskId, u32, MoveEffect)> = None;
            for to in (0..nodes as u32).filter(|&to| to != s) {
                let others = (0..nodes)
                    .filter(|&i| i as u32 != s && i as u32 != to)
                    .map(|i| cost.exec[i])
                    .fold(0.0, f64::max);
                for (&t, removal) in candidates.iter().zip(&removals) {
                    let effect = effect_from_scratch(cost, t, to, others, removal);
                    if chosen.is_none_or(|(ct, cto, ce)| better(effect, ce, (t, to), (ct, cto))) {
                        chosen = Some((t, to, effect));
                    }
                }
            }
            let Some((t, to, _)) = chosen else { break };
            let from = cost.node_of[t as usize];
            cost.move_task(t, to);
            locked[t as usize] = true;
            tentative.push((t, from));
            let now = cost.objective();
            if now < best * (1.0 - 1e-12) {
                best = now;
                tentative.clear();
                improved = true;
                fruitless = 0;
            } else {
                fruitless += 1;
                if fruitless > 50 {
                    break;
                }
            }
            s = cost.heaviest_node();
        }
        for &(t, from) in tentative.iter().rev() {
            cost.move_task(t, from);
        }
        if !improved || best > pass_start * (1.0 - 5e-4) {
            break;
        }
    }
    (initial, cost.objective())
}

#[test]
fn the_gain_cache_makes_the_same_moves_as_a_full_evaluation() {
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    for case in 0..40 {
        let platform = if case % 2 == 0 {
            four_cluster(rng.random_range(1..4), rng.random_range(1..4))
        } else {
            osc_dc(rng.random_range(1..5), rng.random_range(1..4), 0.5)
        };
        let kind = [
            WorkloadKind::Image,
            WorkloadKind::Sat,
            WorkloadKind::ImageQuery,
        ][case % 3];
        let overlap = [Overlap::High, Overlap::Medium, Overlap::Low][(case / 3) % 3];
        let tasks = rng.random_range(20..200);
        let w = kind.generate(overlap, tasks, platform.storage.len() as u32, &mut rng);
        let k = platform.node_count();
        // Random starts leave many moves to make; every node's list fits in one step.
        let node_of: Vec<u32> = (0..tasks).map(|_| rng.random_range(0..k as u32)).collect();
        assert!(tasks <= CANDIDATES);
        let mut cached = MappingCost::new(&w, &platform, node_of.clone());
        let mut full = MappingCost::new(&w, &platform, node_of);
        let a = refine_mapping(&mut cached, k);
        let b = refine_from_scratch(&mut full, k);
        assert_eq!(cached.node_of, full.node_of, "case {case}");
        assert_eq!(
            (a.0.to_bits(), a.1.to_bits()),
            (b.0.to_bits(), b.1.to_bits())
        );
        assert!(a.1 < a.0, "case {case}: the refinement moved nothing");
        // The cached leaving terms are current after all those moves.
        for t in 0..tasks as TaskId {
            let (exec_from, io) = removal_from_scratch(&cached, t);
            assert_eq!(cached.exec_after_leaving(t).to_bits(), exec_from.to_bits());
            let s = cached.io.len();
            assert_eq!(
                &cached.leave_io[t as usize * s..(t as usize + 1) * s],
                &io[..]
            );
            // `near` is current too: a node is far from t exactly when it holds none of
            // t's files, and then the far IO is the IO of evaluating the move in full.
            let removal = (exec_from, io);
            for to in 0..k as u32 {
                let files = cached.files();
                let holds = w.tasks[t as usize]
                    .files
                    .iter()
                    .any(|&f| cached.readers[to as usize * files + f as usize] > 0);
                assert_eq!(
                    cached.is_far(t, to),
                    !holds,
                    "case {case}, task {t}, node {to}"
                );
                if !holds {
                    let full = effect_from_scratch(&cached, t, to, 0.0, &removal);
                    let far = 0f64.max(full.exec_from).max(full.exec_to)
                        + cached.io_if_far(t).expect("far IO kept");
                    assert_eq!(far.to_bits(), full.objective.to_bits(), "case {case}");
                }
            }
        }
    }
}
