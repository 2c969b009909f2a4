//! The baselines of paper Section 4, fed the same inputs as Het-HPS: HPS (hypergraph
//! partitioning without heterogeneity), the file-aware MCT heuristics MinMin, MaxMin and
//! Sufferage as the paper runs them (online, seeing only files of running tasks) and as
//! clairvoyant whole-batch planners, and Shortest Job First.

mod hps;
mod mct;
mod mct_costs;
mod online_mct;
mod sjf;

pub(crate) use hps::Hps;
pub(crate) use mct::Mct;
pub use mct::MctSelection;
pub use online_mct::OnlineMct;
pub(crate) use online_mct::OnlineMctPolicy;
pub(crate) use sjf::Sjf;
