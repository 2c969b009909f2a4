//! The hetpilot manager library: the I/O shell around the pure core.
//!
//! The *pure core* (`sched`, `sim`, `report`, `staging`, `fairshare`, `alloc`, `trace`)
//! lives in the `hetpilot-core` crate and is re-exported here under the same names: it
//! takes data and returns decisions (no clock, no network, no files; randomness only
//! through an injected seeded RNG). The *I/O shell* (`db`, `server`, `service`, `provision`) turns events
//! into calls of the core and the core's decisions into actions, so the live manager and
//! the simulator run the very same policy code.

pub use hetpilot_core::{alloc, fairshare, report, sched, sim, staging, trace};

pub mod client;
pub mod clock;
pub mod config;
pub mod db;
pub mod provision;
pub mod queue;
pub mod server;
pub mod service;
