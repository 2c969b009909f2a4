//! Variants in the first level: an application may run the same work in several ways
//! (one GPU and one core, or eight cores), and the first level treats each (platform,
//! variant kind) pair as a column of its affinity tables. Platforms have cores *and* GPUs;
//! a variant is feasible only where a node has what it asks for, and the configured
//! first-level policy (PAF, AAF, PA-based RR, fairness, water-fill) hands out the columns'
//! task slots by the measured affinity, so the GPUs go to the applications that gain most.
//!
//! Entry point: [`VariantScheduler::plan`] on a [`VariantSnapshot`] with a seeded RNG.

mod columns;
mod model;
mod plan;

pub use columns::{Column, VariantKind};
pub use model::{Variant, VariantApplication, VariantPlatform, VariantSnapshot, MAX_VARIANTS};
pub use plan::{VariantPlan, VariantScheduler};

#[cfg(test)]
mod tests;
