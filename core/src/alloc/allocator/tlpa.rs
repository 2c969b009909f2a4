//! TLPA_BJS (Fig. 1 of the TLPA paper) for p = average turnaround time (eq. 1).
//!
//! For each allocable cluster c: (I) simulate starting the job on c now and score it with its
//! expected turnaround now + est/speed_c − submit; (II) for the next d waiting jobs α_i in
//! scheduling order: (b) find the earliest time some clusters C' can accommodate α_i,
//! (c) score each k ∈ C' by α_i's expected turnaround there, (d) simulate α_i on the best k.
//! The cluster score is the average of the d+1 turnarounds; the best (lowest) wins, ties to
//! the lower index. Runtimes come from the users' estimates, as the real runtimes are
//! unknown at decision time. Because the emulated scheduler has no backfilling, α_i may not
//! start before α_{i-1}: the earliest time is searched from α_{i-1}'s start.
//! When only one cluster is allocable the choice is forced and nothing is simulated.

use super::{Allocator, AllocatorInput};
use crate::alloc::load::ClusterLoad;
use crate::alloc::model::Job;

/// TLPA_BJS with simulation depth d.
#[derive(Debug, Clone, Default)]
pub struct Tlpa {
    depth: usize,
    scratch: Vec<ClusterLoad>,
}

impl Tlpa {
    /// TLPA looking `depth` waiting jobs ahead.
    pub fn new(depth: usize) -> Self {
        Tlpa {
            depth,
            scratch: Vec::new(),
        }
    }

    /// The scoring function of Fig. 1: average expected turnaround of the job on `c` and of
    /// the next `depth` waiting jobs each on its best cluster.
    pub(crate) fn score(&mut self, d: &AllocatorInput, c: usize) -> f64 {
        let loads = &mut self.scratch;
        loads.resize_with(d.loads.len(), ClusterLoad::default);
        for (scratch, load) in loads.iter_mut().zip(d.loads) {
            scratch.copy_from(load);
        }
        let cluster = &d.clusters[c];
        let end = d.now + d.job.estimate_on(cluster);
        loads[c].occupy(d.job.procs, end, usize::MAX);
        let mut total = end - d.job.submit;
        let mut now = d.now;
        let mut counted = 1usize;
        for alpha in d.waiting.iter().take(self.depth) {
            let Some((k, start, turnaround)) = best_cluster(d, loads, alpha, now) else {
                break;
            };
            for load in loads.iter_mut() {
                load.advance(start);
            }
            now = start;
            loads[k].occupy(
                alpha.procs,
                start + alpha.estimate_on(&d.clusters[k]),
                usize::MAX,
            );
            total += turnaround;
            counted += 1;
        }
        total / counted as f64
    }
}

/// Steps II.b-c: the earliest start of `alpha` from `now`, and among the clusters able to
/// start it then, the one with the best expected turnaround: (cluster, start, turnaround).
fn best_cluster(
    d: &AllocatorInput,
    loads: &[ClusterLoad],
    alpha: &Job,
    now: f64,
) -> Option<(usize, f64, f64)> {
    let start_on = |k: usize| {
        if alpha.procs <= d.clusters[k].procs {
            loads[k].earliest(alpha.procs, now)
        } else {
            None
        }
    };
    let earliest = (0..loads.len())
        .filter_map(start_on)
        .fold(f64::INFINITY, f64::min);
    if !earliest.is_finite() {
        return None;
    }
    let mut best: Option<(usize, f64, f64)> = None;
    for k in (0..loads.len()).filter(|&k| start_on(k) == Some(earliest)) {
        let turnaround = earliest + alpha.estimate_on(&d.clusters[k]) - alpha.submit;
        if best.is_none_or(|(_, _, t)| turnaround < t) {
            best = Some((k, earliest, turnaround));
        }
    }
    best
}

impl Allocator for Tlpa {
    fn name(&self) -> String {
        format!("tlpa-d{}", self.depth)
    }

    fn lookahead(&self) -> usize {
        self.depth
    }

    fn choose(&mut self, d: &AllocatorInput) -> usize {
        if d.allocable.len() == 1 {
            return d.allocable[0];
        }
        let mut best = (d.allocable[0], f64::INFINITY);
        for &c in d.allocable {
            let s = self.score(d, c);
            if s < best.1 {
                best = (c, s);
            }
        }
        best.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::model::Cluster;

    fn job(id: i64, procs: u32, estimate: f64) -> Job {
        Job {
            id,
            submit: 0.0,
            procs,
            runtime: estimate,
            estimate,
        }
    }

    #[test]
    fn score_is_the_average_expected_turnaround_of_fig_1() {
        // Clusters: 4 procs at speed 1, 8 procs at speed 1.25. Job: 4 procs, 10 s; behind it
        // an 8-proc job of 1000 s (only fits the big cluster) and a 4-proc job of 100 s.
        let clusters = [
            Cluster {
                procs: 4,
                speed: 1.0,
            },
            Cluster {
                procs: 8,
                speed: 1.25,
            },
        ];
        let loads = [ClusterLoad::idle(4), ClusterLoad::idle(8)];
        let head = job(0, 4, 10.0);
        let waiting = [job(1, 8, 1000.0), job(2, 4, 100.0)];
        let d = AllocatorInput {
            now: 0.0,
            job: &head,
            clusters: &clusters,
            loads: &loads,
            allocable: &[0, 1],
            waiting: &waiting,
        };
        let mut tlpa = Tlpa::new(1);
        // On cluster 0: head ends at 10; job 1 starts at 0 on cluster 1, ends at 800.
        assert_eq!(tlpa.score(&d, 0), (10.0 + 800.0) / 2.0);
        // On cluster 1: head ends at 8; job 1 waits until 8, ends at 808.
        assert_eq!(tlpa.score(&d, 1), (8.0 + 808.0) / 2.0);
        // Depth 2, head on cluster 0: at t = 0 cluster 0 holds the head until 10 and cluster 1
        // holds job 1 until 800, so job 2 starts at 10 on cluster 0 and ends at 110.
        let mut tlpa = Tlpa::new(2);
        assert_eq!(tlpa.score(&d, 0), (10.0 + 800.0 + 110.0) / 3.0);
        assert_eq!(tlpa.choose(&d), 0);
        // Depth 0 is greedy: the head's own turnaround only, so the faster cluster.
        assert_eq!(Tlpa::new(0).choose(&d), 1);
    }
}
