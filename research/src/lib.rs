//! hetpilot's research side, apart from the product: trace-driven simulators that drive
//! `hetpilot-core`'s policies, and the reports of their outcomes. Pure like the core: data
//! in, outcomes (and rendered tables and charts) out; no clock, files, network or threads
//! of its own beyond rayon's (checked by `manager/tests/structure.rs`). The
//! `hetpilot-research` binary is its command-line edge.
//!
//! - [`sim`]: discrete-event, trace-driven simulators over the core's policies.
//! - [`ptg_generator`]: random PTGs (daggen's shapes), FFT and Strassen graphs, the
//!   multiple-PTG experiment's populations.
//! - [`report`]: tables and SVG charts of the simulators' outcomes, rendered to strings
//!   (the only user of plotters).
//! - [`co_runner_metric_study`]: the two-level paper's Section 6.2 comparison of the raw
//!   and normalized co-runner metrics under MAF, over every subset of applications.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod co_runner_metric_study;
pub mod ptg_generator;
pub mod report;
pub mod sim;
