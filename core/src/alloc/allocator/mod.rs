//! Processor allocation policies: which allocable cluster a job starts on. One plug-in per
//! file behind [`Allocator`], selected by name with [`allocator_by_name`].

mod best_fit;
mod fastest_first;
mod tlpa;

pub use best_fit::BestFit;
pub use fastest_first::FastestFirst;
pub use tlpa::Tlpa;

use super::load::ClusterLoad;
use super::model::{AllocError, Cluster, Job};

/// Everything an allocator may look at when the head job can start now.
#[derive(Debug, Clone, Copy)]
pub struct AllocatorInput<'a> {
    /// The time of the decision, seconds on the trace's clock.
    pub now: f64,
    /// The job to place (the head of the queue).
    pub job: &'a Job,
    /// The clusters, by index.
    pub clusters: &'a [Cluster],
    /// Free processors and expected releases (from estimates) per cluster.
    pub loads: &'a [ClusterLoad],
    /// Clusters with enough free processors for `job` now: non-empty, ascending.
    pub allocable: &'a [usize],
    /// Waiting jobs behind `job`, in scheduling order, at most [`Allocator::lookahead`].
    pub waiting: &'a [Job],
}

/// A processor allocation policy.
pub trait Allocator: Send {
    /// Name as printed in reports (`tlpa` carries its depth: `tlpa-d16`).
    fn name(&self) -> String;
    /// How many waiting jobs the policy wants to see (its look-ahead depth).
    fn lookahead(&self) -> usize {
        0
    }
    /// The chosen cluster, one of `input.allocable`.
    fn choose(&mut self, input: &AllocatorInput) -> usize;
}

/// Names accepted by [`allocator_by_name`].
pub(crate) const ALLOCATOR_NAMES: [&str; 3] = ["bf", "ff", "tlpa"];

/// Deepest TLPA look-ahead: each decision simulates up to this many waiting jobs, and
/// buffers of this size are allocated up front.
pub const MAX_TLPA_DEPTH: usize = 1024;

/// `bf` (best-fit), `ff` (fastest-first) or `tlpa` (TLPA_BJS with look-ahead `depth`, at
/// most [`MAX_TLPA_DEPTH`]).
pub fn allocator_by_name(name: &str, depth: usize) -> Result<Box<dyn Allocator>, AllocError> {
    if depth > MAX_TLPA_DEPTH {
        return Err(AllocError::DepthTooLarge(depth));
    }
    match name {
        "bf" | "best-fit" => Ok(Box::new(BestFit)),
        "ff" | "fastest-first" => Ok(Box::new(FastestFirst)),
        "tlpa" => Ok(Box::new(Tlpa::new(depth))),
        _ => Err(AllocError::UnknownPolicy {
            kind: "allocator",
            name: name.to_string(),
            known: ALLOCATOR_NAMES.join(", "),
        }),
    }
}
