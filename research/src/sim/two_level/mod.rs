//! The two-level paper's simulator (Section 6): scenarios, the pilot-based event engine,
//! per-run outcomes and the experiment suite. Its Markdown/CSV/SVG report is
//! `crate::report::two_level`.

pub(crate) mod engine;
pub(crate) mod outcome;
pub(crate) mod present_share;
pub(crate) mod scenario;
pub mod suite;

pub use engine::{simulate, Arrivals, SimApplication, SimulationInput};
pub use outcome::RunOutcome;
pub use scenario::{Scenario, ScenarioApplication, ScenarioError};
