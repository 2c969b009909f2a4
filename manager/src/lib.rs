//! The hetpilot manager library.
//!
//! The *pure core* (`sched`, `sim`, `staging`, `fairshare`, `ptg`, `alloc`)
//! takes data and returns decisions: no clock, no network, no files, randomness only through
//! an injected seeded RNG. The *I/O shell* (`store`, `server`, `provision`) turns events
//! into calls of the core and the core's decisions into actions, so the live manager and the
//! simulator run the very same policy code.

pub mod alloc;
pub mod client;
pub mod config;
pub mod fairshare;
#[cfg(test)]
mod fuzz;
pub mod provision;
pub mod queue;
pub mod sched;
pub mod server;
pub mod service;
pub mod sim;
pub mod staging;
pub mod store;
pub mod trace;
