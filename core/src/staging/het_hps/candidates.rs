//! The tasks Algorithm 1 may move next: each node's unlocked tasks, ordered by what
//! leaving the node saves (its compute there plus its private transfers, largest first;
//! lower ids first on ties), kept up to date as moves change those savings.
//!
//! A step evaluates the first `limit` of the heaviest node's list against every other node.
//! On a node with at most `limit` unlocked tasks that is every one of them, exactly the
//! paper's step; on larger nodes it bounds a step's work, which otherwise grows with the
//! node's task count and made a 200,000-task plan take tens of minutes.

use crate::staging::het_hps::mapping_cost::MappingCost;
use crate::staging::model::TaskId;
use std::collections::BTreeSet;

/// Key of a locked task (not in any list).
const LOCKED: u64 = u64::MAX;

/// Unlocked tasks per node, best saving first (see the module doc).
pub(crate) struct Candidates {
    per_node: Vec<BTreeSet<(u64, TaskId)>>,
    /// Each task's current key (or `LOCKED`).
    key: Vec<u64>,
}

/// Orders larger savings first: savings are non-negative, so their bit patterns order as
/// the numbers do, and the complement reverses that.
fn key_of(saving: f64) -> u64 {
    !saving.max(0.0).to_bits()
}

impl Candidates {
    /// Every task unlocked, on the node the mapping gives it.
    pub(crate) fn new(cost: &MappingCost<'_>, nodes: usize) -> Self {
        let mut per_node = vec![BTreeSet::new(); nodes];
        let key: Vec<u64> = (0..cost.node_of.len() as TaskId)
            .map(|t| key_of(cost.leave_gain(t)))
            .collect();
        for (t, (&k, &node)) in key.iter().zip(&cost.node_of).enumerate() {
            per_node[node as usize].insert((k, t as TaskId));
        }
        Candidates { per_node, key }
    }

    /// Up to `limit` unlocked tasks of `node`, best saving first.
    pub(crate) fn first(&self, node: u32, limit: usize) -> Vec<TaskId> {
        self.per_node[node as usize]
            .iter()
            .take(limit)
            .map(|&(_, t)| t)
            .collect()
    }

    /// Locks task t, which is on `node` (call before moving it).
    pub(crate) fn lock(&mut self, t: TaskId, node: u32) {
        let k = std::mem::replace(&mut self.key[t as usize], LOCKED);
        if k != LOCKED {
            self.per_node[node as usize].remove(&(k, t));
        }
    }

    /// Re-keys the unlocked tasks whose saving changed (see [`MappingCost::take_changed`]).
    pub(crate) fn refresh(&mut self, cost: &mut MappingCost<'_>) {
        for t in cost.take_changed() {
            let old = self.key[t as usize];
            if old == LOCKED {
                continue;
            }
            let new = key_of(cost.leave_gain(t));
            if new != old {
                let list = &mut self.per_node[cost.node_of[t as usize] as usize];
                list.remove(&(old, t));
                list.insert((new, t));
                self.key[t as usize] = new;
            }
        }
    }
}
