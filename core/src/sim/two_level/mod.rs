//! The two-level paper's simulator (Section 6): scenarios, the pilot-based event engine,
//! per-run outcomes, the experiment suite, and its Markdown/CSV/SVG report.

pub mod engine;
pub mod outcome;
pub mod plots;
pub mod report;
pub mod scenario;
pub mod suite;

pub use engine::{simulate, Arrivals, SimApplication, SimulationInput};
pub use outcome::{AppOutcome, RunOutcome};
pub use scenario::{Scenario, ScenarioError};
