//! The baselines of paper Section 4, fed the same inputs as Het-HPS: HPS (hypergraph
//! partitioning without heterogeneity), the file-aware MCT heuristics MinMin, MaxMin and
//! Sufferage, and Shortest Job First.

mod hps;
mod mct;
mod sjf;

pub(crate) use hps::Hps;
pub(crate) use mct::{Mct, MctSelection};
pub(crate) use sjf::Sjf;
