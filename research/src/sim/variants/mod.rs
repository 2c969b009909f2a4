//! The variant simulator: GPU platforms beside CPU platforms, applications with a GPU and
//! a CPU variant of their tasks, and two ways to place them: first-fit variants (each task
//! takes the first of its variants, in declaration order, that fits on a node with free
//! resources, as HyperQueue does) and the variant first level's affinity plan.

mod engine;
mod scenario;

pub use engine::{simulate, Placement, VariantRun};
pub use scenario::{VariantScenario, VariantScenarioError};
