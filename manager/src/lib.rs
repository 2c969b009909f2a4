//! The hetpilot manager library: the I/O shell around the pure core.
//!
//! The *pure core* (`control` and `queue`, the manager's decisions and task queues, over
//! the policies `sched`, `staging`, `fairshare`, `alloc`, `ptg`, plus `trace`) lives in
//! the `hetpilot-core` crate and is re-exported here under the same
//! names: it takes data and returns decisions (no clock, no network, no files; randomness
//! only through an injected seeded RNG). The *I/O shell* (`db`, `server`, `service`,
//! `provision`) feeds events from HTTP, the store and the batch systems into one
//! `control::Control`, applies and persists its decisions, so the live manager and
//! `hetpilot simulate live` run the very same decision code.

pub use hetpilot_core::{alloc, control, fairshare, ptg, queue, sched, staging, trace};

pub mod app_file;
pub mod backup;
pub mod client;
pub mod clock;
pub mod config;
pub mod data_dir_lock;
pub mod db;
pub mod event_stream;
pub mod metrics;
pub mod provision;
pub mod server;
pub mod service;
pub mod source_ranges;
pub mod workflow;
