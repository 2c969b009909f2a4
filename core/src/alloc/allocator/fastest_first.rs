//! Fastest-First [5]: the fastest allocable cluster (fights speed heterogeneity). Ties: the
//! lower index, so with equal speeds it is first-fit in cluster order.

use super::{Allocator, AllocatorInput};

#[derive(Debug, Clone, Copy, Default)]
/// Fastest first: the fastest allocable cluster.
pub struct FastestFirst;

impl Allocator for FastestFirst {
    fn name(&self) -> String {
        "ff".into()
    }

    fn choose(&mut self, d: &AllocatorInput) -> usize {
        let mut best = d.allocable[0];
        for &c in &d.allocable[1..] {
            if d.clusters[c].speed > d.clusters[best].speed {
                best = c;
            }
        }
        best
    }
}
