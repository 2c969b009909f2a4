//! Presentation of simulation outcomes: Markdown and text tables, CSV text and SVG charts,
//! all rendered to strings (the CLI decides where they go). The simulators in `sim`
//! compute outcomes; this module only formats them, and is the only user of `plotters`.
//!
//! - [`chart`]: the SVG charts (grouped bars) shared by the reports.
//! - [`two_level`]: the two-level suite report (Figs. 3-7, Section 6.5) and its CSV.
//! - [`two_level_claims`]: the two-level headline claims with intervals and verdicts.
//! - [`tlpa`]: the TLPA Table II sweep's table and charts.
//! - [`fairshare`]: the fairshare experiment's CDFs and request scatter plot.
//! - [`staging`]: the staging experiment's table, throughput chart and paired comparisons.
//! - [`stats`]: confidence intervals for headline differences.

pub(crate) mod chart;
pub mod fairshare;
pub mod ptg;
pub mod staging;
pub mod stats;
pub mod tlpa;
pub mod two_level;
pub mod two_level_claims;
pub mod variants;

pub use chart::ChartError;
