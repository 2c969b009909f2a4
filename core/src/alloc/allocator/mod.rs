//! Processor allocation policies: which allocable cluster a job starts on. One plug-in per
//! file behind [`Allocator`], selected by name through [`AllocatorKind`].

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

/// Deepest TLPA look-ahead: each decision simulates up to this many waiting jobs, and
/// buffers of this size are allocated up front.
pub const MAX_TLPA_DEPTH: usize = 1024;

hetpilot_protocol::named_enum! {
    /// The processor allocation policies, by the names settings files and command lines
    /// give them.
    pub enum AllocatorKind("allocator") {
        /// Best fit: the allocable cluster left with the fewest free processors.
        BestFit = "bf",
        /// Fastest first: the fastest allocable cluster.
        FastestFirst = "ff",
        /// TLPA_BJS: the cluster whose choice delays the waiting jobs least, looking
        /// ahead over a given number of them.
        Tlpa = "tlpa",
    }
}

impl AllocatorKind {
    /// The allocator; `depth` is TLPA's look-ahead, at most [`MAX_TLPA_DEPTH`] (checked
    /// for every kind, so a setting is refused whichever allocator it is given with).
    pub fn build(self, depth: usize) -> Result<Box<dyn Allocator>, AllocError> {
        if depth > MAX_TLPA_DEPTH {
            return Err(AllocError::DepthTooLarge(depth));
        }
        Ok(match self {
            AllocatorKind::BestFit => Box::new(BestFit),
            AllocatorKind::FastestFirst => Box::new(FastestFirst),
            AllocatorKind::Tlpa => Box::new(Tlpa::new(depth)),
        })
    }
}
