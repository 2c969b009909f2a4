//! The baselines of paper Section 4, fed the same inputs as Het-HPS: HPS (hypergraph
//! partitioning without heterogeneity), the file-aware MCT heuristics MinMin, MaxMin and
//! Sufferage, and Shortest Job First.

mod hps;
mod mct;
mod sjf;

pub use hps::Hps;
pub use mct::{Mct, MctSelection};
pub use sjf::Sjf;
