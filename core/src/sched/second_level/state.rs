//! The working state of Algorithm 3 on one platform: remaining shares, free nodes, the
//! set U_done, and which profiled combinations can still be formed.

use super::PlatformMapping;
use crate::sched::affinity::CoRunnerAffinity;
use crate::sched::profile::{Combination, RuntimeProfile};
use crate::sched::snapshot::NodeGroup;

/// Shares, nodes and placements while a policy maps one platform.
#[derive(Debug)]
pub(crate) struct MappingState<'a> {
    pub(crate) profile: &'a RuntimeProfile,
    /// Profile index of the platform.
    pub(crate) platform: usize,
    pub(crate) cores_per_node: u32,
    /// Profile index of each local application.
    pub(crate) apps: Vec<usize>,
    /// Remaining cores to place per local application.
    pub(crate) shares: Vec<u32>,
    /// Nodes not yet given a combination.
    pub(crate) free_nodes: u32,
    /// `U_done`: applications that cannot join any further combination.
    pub(crate) done: Vec<bool>,
    /// Profile application index → local index.
    local: Vec<Option<usize>>,
    /// Per local application: the profiled combinations on this platform whose members
    /// all have a share here (and have at most two members when pairwise).
    candidates: Vec<Vec<usize>>,
    pairwise: bool,
    groups: Vec<NodeGroup>,
}

impl<'a> MappingState<'a> {
    pub(super) fn new(mapping: &PlatformMapping<'a>, pairwise: bool) -> Self {
        let mut local = vec![None; mapping.profile.applications().len()];
        for (l, &a) in mapping.apps.iter().enumerate() {
            local[a] = Some(l);
        }
        let all = mapping.profile.combinations(mapping.platform);
        let candidates = mapping
            .apps
            .iter()
            .map(|&app| {
                mapping
                    .profile
                    .combinations_with(mapping.platform, app)
                    .iter()
                    .copied()
                    .filter(|&c| {
                        let members = &all[c].members;
                        (!pairwise || members.len() <= 2)
                            && members.iter().all(|&m| local[m].is_some())
                    })
                    .collect()
            })
            .collect();
        let mut state = Self {
            profile: mapping.profile,
            platform: mapping.platform,
            cores_per_node: mapping.cores_per_node,
            apps: mapping.apps.clone(),
            shares: mapping.shares.clone(),
            free_nodes: mapping.nodes,
            done: vec![false; mapping.apps.len()],
            local,
            candidates,
            pairwise,
            groups: Vec::new(),
        };
        state.refresh_done();
        state
    }

    /// Number of local applications.
    pub(crate) fn len(&self) -> usize {
        self.apps.len()
    }

    /// Cores each member of `combo` needs per node (the node split evenly).
    pub(crate) fn cores_each(&self, combo: &Combination) -> u32 {
        self.cores_per_node / combo.members.len() as u32
    }

    /// Whether every member of `combo` is here and not done (size-limited when pairwise).
    pub(crate) fn eligible(&self, combo: &Combination) -> bool {
        (!self.pairwise || combo.members.len() <= 2)
            && combo
                .members
                .iter()
                .all(|&m| self.local[m].is_some_and(|l| !self.done[l]))
    }

    /// How many nodes of `combo` can be placed now (0 if not eligible).
    pub(crate) fn capacity(&self, combo: &Combination) -> u32 {
        if !self.eligible(combo) {
            return 0;
        }
        let each = self.cores_each(combo);
        combo
            .members
            .iter()
            .map(|&m| self.shares[self.local[m].unwrap_or_default()] / each)
            .min()
            .unwrap_or(0)
            .min(self.free_nodes)
    }

    /// Indices (into the platform's profiled combinations) of the combinations that
    /// include local application `a` and whose members all have a share here.
    pub(crate) fn candidates(&self, a: usize) -> &[usize] {
        &self.candidates[a]
    }

    /// Profiled combinations including local application `a` that could be placed now.
    pub(crate) fn feasible_with(&self, a: usize) -> impl Iterator<Item = &'a Combination> + '_ {
        let all = self.profile.combinations(self.platform);
        self.candidates[a]
            .iter()
            .map(move |&c| &all[c])
            .filter(move |combo| self.capacity(combo) > 0)
    }

    /// Co-runner affinity `U[i].CA[j]` of local application `a` over the combinations
    /// whose members are all still open (Algorithm 3 line 8).
    pub(crate) fn co_runner_affinity(&self, a: usize, metric: CoRunnerAffinity) -> Option<f64> {
        let all = self.profile.combinations(self.platform);
        let app = self.apps[a];
        let solo = self.profile.one_core(app, self.platform);
        let mut sum = 0.0;
        let mut count = 0usize;
        for &c in &self.candidates[a] {
            let combo = &all[c];
            if !self.eligible(combo) {
                continue;
            }
            if let Some(with) = combo.runtime_of(app) {
                sum += metric.difference(with, solo);
                count += 1;
            }
        }
        (count > 0).then(|| sum / count as f64)
    }

    /// Feasible combination with the smallest runtime for local application `a`
    /// (ties to the first profiled).
    pub(crate) fn best_for(&self, a: usize) -> Option<&'a Combination> {
        let app = self.apps[a];
        self.feasible_with(a).min_by(|x, y| {
            x.runtime_of(app)
                .unwrap_or(f64::INFINITY)
                .total_cmp(&y.runtime_of(app).unwrap_or(f64::INFINITY))
        })
    }

    /// Place up to `count` nodes of `combo`; returns how many were placed.
    pub(crate) fn place(&mut self, combo: &Combination, count: u32) -> u32 {
        let count = count.min(self.capacity(combo));
        if count == 0 {
            return 0;
        }
        let each = self.cores_each(combo);
        let slots: Vec<(usize, u32)> = combo
            .members
            .iter()
            .map(|&m| {
                let l = self.local[m].unwrap_or_default();
                self.shares[l] -= each * count;
                (l, each)
            })
            .collect();
        self.free_nodes -= count;
        match self.groups.iter_mut().find(|g| g.slots == slots) {
            Some(g) => g.nodes += count,
            None => self.groups.push(NodeGroup {
                nodes: count,
                slots,
            }),
        }
        self.refresh_done();
        count
    }

    /// Place `count` nodes that run only local application `a` on all cores (AllCore),
    /// whether or not the profile has an AllCore entry for it.
    pub(crate) fn place_alone(&mut self, a: usize, count: u32) -> u32 {
        let count = count
            .min(self.shares[a] / self.cores_per_node.max(1))
            .min(self.free_nodes);
        if count == 0 {
            return 0;
        }
        self.shares[a] -= count * self.cores_per_node;
        self.free_nodes -= count;
        let slots = vec![(a, self.cores_per_node)];
        match self.groups.iter_mut().find(|g| g.slots == slots) {
            Some(g) => g.nodes += count,
            None => self.groups.push(NodeGroup {
                nodes: count,
                slots,
            }),
        }
        self.refresh_done();
        count
    }

    /// Mark as done every application that has no share or no feasible combination,
    /// until nothing changes (Algorithm 3 line 10).
    pub(crate) fn refresh_done(&mut self) {
        loop {
            let mut changed = false;
            for a in 0..self.apps.len() {
                if !self.done[a] && (self.shares[a] == 0 || self.feasible_with(a).next().is_none())
                {
                    self.done[a] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Applications not yet done.
    pub(crate) fn open(&self) -> Vec<usize> {
        (0..self.apps.len()).filter(|&a| !self.done[a]).collect()
    }

    /// The placed groups, the leftover shares and the free nodes.
    pub(super) fn finish(self) -> (Vec<NodeGroup>, Vec<u32>, u32) {
        (self.groups, self.shares, self.free_nodes)
    }
}
