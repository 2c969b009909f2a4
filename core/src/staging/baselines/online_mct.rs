//! The paper's MinMin, MaxMin and Sufferage (Section 4, after Casanova et al. [5]) as
//! online schedulers: at every scheduling event (a node falls idle) the MCT of each
//! unscheduled task on each node counts as free only "the files already available on the
//! node and the files that will be staged onto that compute node by currently running
//! tasks" (§4) — never files of tasks merely planned for the node, which is what the
//! clairvoyant planners of `mct.rs` assume.
//!
//! A pass at time `now`: node availability is `now` for an idle node and the estimated end
//! of its running task otherwise; the rule picks a task among the unscheduled ones (MinMin:
//! smallest best MCT; MaxMin: largest; Sufferage: largest gap between second-best and best
//! MCT). If its best node is idle the task starts there; if its best node is busy the task
//! waits for a later event (our reading: only running tasks hold a node, so there is no
//! per-node queue) and the rule's next task is considered. The pass ends when no node is
//! idle or every unscheduled task waits. A pass with every node idle always starts a task,
//! so the batch always ends.

use rayon::prelude::*;

use super::mct_costs::MctCosts;
use super::MctSelection;
use crate::staging::error::StagingError;
use crate::staging::model::{StagingPlatform, TaskId, Workload};
use crate::staging::policy::{validate, StagingPlan, StagingPolicy};

/// The paper's online MinMin, MaxMin or Sufferage: the plan is made during the run.
/// `idle_only` is a sensitivity variant: MCTs over the idle nodes only, so no task waits
/// for a busy node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OnlineMctPolicy {
    pub rule: MctSelection,
    pub idle_only: bool,
}

impl StagingPolicy for OnlineMctPolicy {
    fn name(&self) -> &'static str {
        match (self.rule, self.idle_only) {
            (MctSelection::MinMin, false) => "minmin",
            (MctSelection::MaxMin, false) => "maxmin",
            (MctSelection::Sufferage, false) => "sufferage",
            (MctSelection::MinMin, true) => "minmin-idle",
            (MctSelection::MaxMin, true) => "maxmin-idle",
            (MctSelection::Sufferage, true) => "sufferage-idle",
        }
    }

    fn plan(
        &self,
        workload: &Workload,
        platform: &StagingPlatform,
        _seed: u64,
    ) -> Result<StagingPlan, StagingError> {
        validate(workload, platform)?;
        Ok(StagingPlan::Online {
            rule: self.rule,
            idle_only: self.idle_only,
        })
    }
}

/// The online dispatcher's state for one batch.
#[derive(Debug)]
pub struct OnlineMct {
    rule: MctSelection,
    /// Consider idle nodes only (no waiting for a busy node).
    idle_only: bool,
    k: usize,
    files: usize,
    /// `fixed[t * k + i]`: local read + compute of task t on node i.
    fixed: Vec<f64>,
    /// `transfer[t * k + i]`: transfer of the files of t that node i neither holds nor is
    /// fetching for its running task.
    transfer: Vec<f64>,
    /// `present[i * files + f]`: node i holds f or its running task stages it.
    present: Vec<bool>,
    /// Seconds per byte from storage node p to node i: `rate[i][p]`.
    rate: Vec<Vec<f64>>,
    /// Tasks reading each file.
    readers: Vec<Vec<TaskId>>,
    /// Unscheduled tasks, ascending.
    pending: Vec<TaskId>,
    /// Estimated end of each node's running task (its MCT when it started).
    busy_until: Vec<f64>,
}

impl OnlineMct {
    /// A dispatcher for `workload` on `platform` with the given selection rule; with
    /// `idle_only` the MCTs range over the idle nodes only.
    pub fn new(
        rule: MctSelection,
        idle_only: bool,
        workload: &Workload,
        platform: &StagingPlatform,
    ) -> Self {
        let nodes = platform.nodes();
        let k = nodes.len();
        let MctCosts {
            fixed,
            transfer,
            rate,
            readers,
        } = MctCosts::of(workload, platform, &nodes);
        OnlineMct {
            rule,
            idle_only,
            k,
            files: workload.files.len(),
            fixed,
            transfer,
            present: vec![false; k * workload.files.len()],
            rate,
            readers,
            pending: (0..workload.tasks.len() as TaskId).collect(),
            busy_until: vec![0.0; k],
        }
    }

    /// Tasks not started yet.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// One scheduling event at `now` with the nodes in `idle` free: the (task, node) pairs
    /// to start now, in the order the rule chose them.
    pub fn dispatch(
        &mut self,
        workload: &Workload,
        now: f64,
        idle: &[usize],
    ) -> Vec<(TaskId, usize)> {
        let mut idle_now = vec![false; self.k];
        for &i in idle {
            idle_now[i] = true;
        }
        let avail: Vec<f64> = (0..self.k)
            .map(|i| {
                if idle_now[i] {
                    now
                } else {
                    self.busy_until[i].max(now)
                }
            })
            .collect();
        let mut avail = avail;
        let mut waiting = vec![false; self.pending.len()];
        let mut started = Vec::new();
        while idle_now.iter().any(|&b| b) {
            // Rule key, best node and its MCT of every task that does not wait.
            let mut ranked: Vec<(f64, usize, usize, f64)> = self
                .pending
                .par_iter()
                .enumerate()
                .filter(|(j, _)| !waiting[*j])
                .map(|(j, &t)| {
                    let (best, second) = self.top_two(t as usize, &avail, &idle_now);
                    let key = match self.rule {
                        MctSelection::MinMin => best.1,
                        MctSelection::MaxMin => -best.1,
                        MctSelection::Sufferage => -(second - best.1),
                    };
                    (key, j, best.0, best.1)
                })
                .collect();
            ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let Some(pos) = ranked.iter().position(|r| idle_now[r.2]) else {
                break; // every remaining task waits for a busy node
            };
            for r in &ranked[..pos] {
                waiting[r.1] = true;
            }
            let (_, j, node, mct) = ranked[pos];
            let t = self.pending[j];
            idle_now[node] = false;
            avail[node] = mct;
            self.busy_until[node] = mct;
            self.stage(workload, t, node);
            started.push((t, node));
            self.pending.remove(j);
            waiting.remove(j);
        }
        started
    }

    /// (best node, its MCT) and the second-best MCT (the best again when k = 1).
    fn top_two(&self, t: usize, avail: &[f64], idle: &[bool]) -> ((usize, f64), f64) {
        let mut best = (0, f64::INFINITY);
        let mut second = f64::INFINITY;
        for (i, a) in avail.iter().enumerate() {
            if self.idle_only && !idle[i] {
                continue;
            }
            let v = a + self.transfer[t * self.k + i] + self.fixed[t * self.k + i];
            if v < best.1 {
                second = best.1;
                best = (i, v);
            } else if v < second {
                second = v;
            }
        }
        (best, if second.is_finite() { second } else { best.1 })
    }

    /// Task t runs on node i: its files are on, or headed to, the node from now on.
    fn stage(&mut self, workload: &Workload, t: TaskId, i: usize) {
        for &f in &workload.tasks[t as usize].files {
            let slot = i * self.files + f as usize;
            if self.present[slot] {
                continue;
            }
            self.present[slot] = true;
            let file = &workload.files[f as usize];
            let cost = file.size_bytes as f64 * self.rate[i][file.storage as usize];
            for &u in &self.readers[f as usize] {
                self.transfer[u as usize * self.k + i] -= cost;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::model::{ComputeCluster, DataFile, StorageNode, Task};

    fn two_nodes() -> StagingPlatform {
        StagingPlatform {
            clusters: vec![ComputeCluster {
                name: "c".into(),
                nodes: 2,
                compute_seconds_per_byte: 1e-3,
                disk_bandwidth: 1000.0,
                link_bandwidth: 200.0,
            }],
            storage: vec![StorageNode {
                io_bandwidth: 1000.0,
            }],
        }
    }

    /// Tasks 0 and 1 share file 0 (100 B); task 2 reads file 1 (10 B).
    fn shared() -> Workload {
        Workload {
            files: vec![
                DataFile {
                    size_bytes: 100,
                    storage: 0,
                },
                DataFile {
                    size_bytes: 10,
                    storage: 0,
                },
            ],
            tasks: vec![
                Task { files: vec![0] },
                Task { files: vec![0] },
                Task { files: vec![1] },
            ],
        }
    }

    #[test]
    fn only_running_tasks_files_count_and_a_task_can_wait_for_its_node() {
        let w = shared();
        let mut d = OnlineMct::new(MctSelection::MinMin, false, &w, &two_nodes());
        // MinMin starts the cheapest task (2) first, then task 0 on the other node.
        let first = d.dispatch(&w, 0.0, &[0, 1]);
        assert_eq!(first, [(2, 0), (0, 1)]);
        // Node 0 falls idle at 0.5; task 1 ends sooner on node 1 (free at 1.2, its running
        // task stages file 0: 1.4) than on node 0 (0.5 + 1.0 transfer + 0.2 = 1.7), so it
        // waits rather than fetch the file again.
        assert!(d.dispatch(&w, 0.5, &[0]).is_empty());
        assert_eq!(d.dispatch(&w, 1.2, &[0, 1]), [(1, 1)]);
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn the_idle_only_variant_never_waits() {
        let w = shared();
        let mut d = OnlineMct::new(MctSelection::MinMin, true, &w, &two_nodes());
        assert_eq!(d.dispatch(&w, 0.0, &[0, 1]), [(2, 0), (0, 1)]);
        // Node 0 idle at 0.5: task 1 starts there although node 1 will hold its file.
        assert_eq!(d.dispatch(&w, 0.5, &[0]), [(1, 0)]);
    }

    #[test]
    fn maxmin_starts_the_longest_task_first() {
        let w = shared();
        let mut d = OnlineMct::new(MctSelection::MaxMin, false, &w, &two_nodes());
        let first = d.dispatch(&w, 0.0, &[0, 1]);
        assert_eq!(first[0].0, 0, "{first:?}");
        assert_eq!(first.len(), 2);
    }
}
