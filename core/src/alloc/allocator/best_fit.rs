//! Best-Fit [4]: the allocable cluster that leaves the fewest free processors (fights
//! spatial fragmentation). Ties: the faster cluster, then the lower index.

use super::{Allocator, AllocatorInput};

/// Best fit: the allocable cluster that leaves the fewest processors free.
#[derive(Debug, Clone, Copy, Default)]
pub struct BestFit;

impl Allocator for BestFit {
    fn name(&self) -> String {
        "bf".into()
    }

    fn choose(&mut self, d: &AllocatorInput) -> usize {
        let mut best = d.allocable[0];
        for &c in &d.allocable[1..] {
            let left = d.loads[c].free - d.job.procs;
            let best_left = d.loads[best].free - d.job.procs;
            if left < best_left
                || (left == best_left && d.clusters[c].speed > d.clusters[best].speed)
            {
                best = c;
            }
        }
        best
    }
}
