//! Errors of the staging core: bad hypergraph input (with the line that is wrong), bad
//! partitioning requests, and inconsistent platform or workload descriptions.

use thiserror::Error;

/// Something wrong with a hypergraph, a partitioning request or a staging plan input.
#[derive(Debug, Error, PartialEq)]
pub enum StagingError {
    /// An hMETIS file that cannot be read; `line` is 1-based.
    #[error("hMETIS input, line {line}: {message}")]
    Hmetis {
        /// Line number, counting from 1.
        line: usize,
        /// What is wrong on it.
        message: String,
    },
    /// A net lists a pin that is not a vertex of the hypergraph.
    #[error("net {net} has pin {pin}, but the hypergraph has only {num_vertices} vertices")]
    PinOutOfRange {
        /// The net's index, from 0.
        net: usize,
        /// The pin (vertex index) it lists.
        pin: usize,
        /// Vertices of the hypergraph.
        num_vertices: usize,
    },
    /// A net without pins.
    #[error("net {net} has no pins")]
    EmptyNet {
        /// The net's index, from 0.
        net: usize,
    },
    /// Weights must be positive.
    #[error("{what} {index} has weight {weight}; weights must be positive")]
    NonPositiveWeight {
        /// `"vertex"` or `"net"`.
        what: &'static str,
        /// Its index, from 0.
        index: usize,
        /// The weight given.
        weight: i64,
    },
    /// Lengths of parallel arrays disagree.
    #[error("{what}: expected {expected} entries, got {got}")]
    LengthMismatch {
        /// Which array, e.g. `net weights`.
        what: &'static str,
        /// Entries it must have.
        expected: usize,
        /// Entries it has.
        got: usize,
    },
    /// The number of blocks is 0 or larger than the number of vertices.
    #[error("cannot split {num_vertices} vertices into k = {k} blocks (need 1 <= k <= vertices)")]
    InvalidK {
        /// The number of blocks asked for.
        k: usize,
        /// Vertices of the hypergraph.
        num_vertices: usize,
    },
    /// The imbalance parameter is negative or not finite.
    #[error("imbalance epsilon must be a finite number >= 0, got {0}")]
    InvalidEpsilon(f64),
    /// A per-block capacity list is unusable.
    #[error("block targets: {0}")]
    InvalidTargets(String),
    /// A partition file that does not fit the hypergraph; `line` is 1-based.
    #[error("partition input, line {line}: {message}")]
    PartitionFile {
        /// Line number, counting from 1.
        line: usize,
        /// What is wrong on it.
        message: String,
    },
    /// A task refers to a file that is not in the file list, or similar model problems.
    #[error("workload: {0}")]
    InvalidWorkload(String),
    /// A platform without nodes or storage, or with non-positive bandwidths.
    #[error("platform: {0}")]
    InvalidPlatform(String),
}
