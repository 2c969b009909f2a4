//! Clairvoyant file-aware minimum-completion-time planners (`minmin-clairvoyant`,
//! `maxmin-clairvoyant`, `sufferage-clairvoyant`): MinMin, MaxMin and Sufferage run once
//! over the whole batch before it starts. The MCT of task t on node i is the node's
//! ready time plus the transfer of the files that are neither on the node nor already
//! *planned* for it, plus local read and compute — a stronger variant than the paper's
//! online heuristics (`online_mct.rs`), which see only files of running tasks. Each step picks a task by the selection
//! rule, assigns it to its best node and updates that node only.
//!
//! Incremental: per (task, node) we keep the remaining transfer time, decreased when a
//! file reaches the node (only tasks that read that file are touched), and per task the
//! best and second-best node, so one step costs O(#tasks + pins of the new files).

use rayon::prelude::*;

use super::mct_costs::MctCosts;
use crate::staging::error::StagingError;
use crate::staging::model::{NodeInfo, StagingPlatform, TaskId, Workload};
use crate::staging::policy::{validate, StagingPlan, StagingPolicy};

/// Which unscheduled task goes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MctSelection {
    /// The task with the smallest best MCT.
    MinMin,
    /// The task with the largest best MCT.
    MaxMin,
    /// The task with the largest gap between its second-best and best MCT.
    Sufferage,
}

/// An MCT planner with a selection rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mct(pub MctSelection);

impl StagingPolicy for Mct {
    fn name(&self) -> &'static str {
        match self.0 {
            MctSelection::MinMin => "minmin-clairvoyant",
            MctSelection::MaxMin => "maxmin-clairvoyant",
            MctSelection::Sufferage => "sufferage-clairvoyant",
        }
    }

    fn plan(
        &self,
        workload: &Workload,
        platform: &StagingPlatform,
        _seed: u64,
    ) -> Result<StagingPlan, StagingError> {
        validate(workload, platform)?;
        Ok(StagingPlan::PerNode(schedule(workload, platform, self.0)))
    }
}

fn schedule(
    workload: &Workload,
    platform: &StagingPlatform,
    rule: MctSelection,
) -> Vec<Vec<TaskId>> {
    let nodes: Vec<NodeInfo> = platform.nodes();
    let k = nodes.len();
    let n = workload.tasks.len();
    // fixed[t * k + i]: local read + compute; transfer[t * k + i]: files still to fetch.
    let MctCosts {
        fixed,
        mut transfer,
        rate,
        readers,
    } = MctCosts::of(workload, platform, &nodes);
    let mut ready = vec![0.0f64; k];
    let mut present = vec![false; k * workload.files.len()];
    let mut scheduled = vec![false; n];
    let mut order: Vec<Vec<TaskId>> = vec![Vec::new(); k];
    let mct = |t: usize, i: usize, transfer: &[f64], ready: &[f64]| {
        ready[i] + transfer[t * k + i] + fixed[t * k + i]
    };
    // best/second-best node per task.
    let mut top: Vec<(usize, usize)> = (0..n)
        .map(|t| top_two(t, k, &transfer, &fixed, &ready))
        .collect();
    for _ in 0..n {
        // Select a task.
        let pick = (0..n)
            .into_par_iter()
            .filter(|&t| !scheduled[t])
            .map(|t| {
                let (b, s) = top[t];
                let best = mct(t, b, &transfer, &ready);
                let key = match rule {
                    MctSelection::MinMin => -best,
                    MctSelection::MaxMin => best,
                    MctSelection::Sufferage => {
                        if s == b {
                            best
                        } else {
                            mct(t, s, &transfer, &ready) - best
                        }
                    }
                };
                (key, t)
            })
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
            .expect("unscheduled task left");
        let t = pick.1;
        let i = top[t].0;
        scheduled[t] = true;
        ready[i] = mct(t, i, &transfer, &ready);
        order[i].push(t as TaskId);
        // Files of t are now on (or headed to) node i.
        for &f in &workload.tasks[t].files {
            let slot = i * workload.files.len() + f as usize;
            if present[slot] {
                continue;
            }
            present[slot] = true;
            let file = &workload.files[f as usize];
            let cost = file.size_bytes as f64 * rate[i][file.storage as usize];
            for &u in &readers[f as usize] {
                transfer[u as usize * k + i] -= cost;
            }
        }
        // Node i changed for every task: refresh the best/second-best where needed.
        top.par_iter_mut().enumerate().for_each(|(u, tb)| {
            if !scheduled[u] {
                *tb = update_top(u, i, *tb, k, &transfer, &fixed, &ready);
            }
        });
    }
    order
}

fn value(t: usize, i: usize, k: usize, transfer: &[f64], fixed: &[f64], ready: &[f64]) -> f64 {
    ready[i] + transfer[t * k + i] + fixed[t * k + i]
}

/// Best and second-best node of task t (equal when k = 1); lower id on ties.
fn top_two(t: usize, k: usize, transfer: &[f64], fixed: &[f64], ready: &[f64]) -> (usize, usize) {
    let mut best = 0;
    let mut second = usize::MAX;
    for i in 1..k {
        let v = value(t, i, k, transfer, fixed, ready);
        if v < value(t, best, k, transfer, fixed, ready) {
            second = best;
            best = i;
        } else if second == usize::MAX || v < value(t, second, k, transfer, fixed, ready) {
            second = i;
        }
    }
    (best, if second == usize::MAX { best } else { second })
}

/// Updates (best, second) after node `changed`'s value for task t moved.
fn update_top(
    t: usize,
    changed: usize,
    (best, second): (usize, usize),
    k: usize,
    transfer: &[f64],
    fixed: &[f64],
    ready: &[f64],
) -> (usize, usize) {
    if changed == best || changed == second {
        return top_two(t, k, transfer, fixed, ready);
    }
    let v = value(t, changed, k, transfer, fixed, ready);
    let vb = value(t, best, k, transfer, fixed, ready);
    let vs = value(t, second, k, transfer, fixed, ready);
    if v < vb || (v == vb && changed < best) {
        (changed, best)
    } else if v < vs || (v == vs && changed < second) {
        (best, changed)
    } else {
        (best, second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::platforms::four_cluster;
    use crate::staging::workload::{Overlap, WorkloadKind};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn every_rule_plans_every_task_once() {
        let platform = four_cluster(2, 3);
        let w =
            WorkloadKind::Sat.generate(Overlap::High, 120, 3, &mut ChaCha8Rng::seed_from_u64(2));
        for rule in [
            MctSelection::MinMin,
            MctSelection::MaxMin,
            MctSelection::Sufferage,
        ] {
            let plan = Mct(rule).plan(&w, &platform, 0).unwrap();
            assert!(plan.is_complete(120), "{rule:?}");
        }
    }

    #[test]
    fn file_awareness_saves_transfers() {
        // With files counted as present once planned to a node, high-overlap batches need
        // far fewer (node, file) transfers than task-file requests.
        let platform = four_cluster(2, 3);
        let w =
            WorkloadKind::Image.generate(Overlap::High, 200, 3, &mut ChaCha8Rng::seed_from_u64(4));
        let plan = Mct(MctSelection::MinMin).plan(&w, &platform, 0).unwrap();
        let node = plan.node_of_tasks(200).unwrap();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for (t, task) in w.tasks.iter().enumerate() {
            pairs.extend(task.files.iter().map(|&f| (node[t], f)));
        }
        let requests = pairs.len();
        pairs.sort_unstable();
        pairs.dedup();
        assert!(pairs.len() * 2 < requests, "{} of {requests}", pairs.len());
    }
}
