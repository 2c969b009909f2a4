//! hetpilot's pure core: the policies the live manager runs (and the research simulators in
//! `hetpilot-research` drive).
//!
//! Every module here takes data and returns decisions: no clock, no network, no files,
//! no database, randomness only through an injected seeded RNG. The crate's dependencies
//! exclude tokio, rusqlite, reqwest, axum and ssh2 (checked by `deploy/test-all.sh` with
//! `cargo tree -p hetpilot-core -e normal`), so the compiler keeps it that way.
//!
//! - [`sched`]: two-level scheduling (platform and co-runner affinity, Algorithms 1–3).
//! - [`staging`]: batch-shared I/O: hypergraph partitioning, Het-HPS and its baselines.
//! - [`fairshare`]: multi-resource fairshare penalties, usage and priority.
//! - [`alloc`]: rigid parallel jobs across clusters (best fit, fastest first, TLPA).
//! - [`trace`]: workload traces (SWF, machine descriptions) as plain data.
//! - [`queue`]: the manager's per-application task queues, leases and attempts.
//! - [`control`]: every decision of the live manager as one state machine over the
//!   queues and the policies above; `control::simulation` drives it without a manager.
//! - [`event_queue`]: the time-ordered event queue every simulator runs on.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod alloc;
pub mod control;
pub mod event_queue;
pub mod fairshare;
/// Input generators for parsers' property tests (tests, and `--features fuzzing`).
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzz;
pub mod ptg;
pub mod queue;
pub mod sched;
pub mod staging;
#[cfg(test)]
pub(crate) mod test_apps;
pub mod trace;
