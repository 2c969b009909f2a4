//! Discrete-event, trace-driven simulators that drive the same pure policy code as the live
//! manager (`hetpilot-core`): one submodule per kind of experiment, plus the event queue
//! they share.

pub mod alloc;
#[cfg(test)]
mod alloc_live_tests;
pub mod alloc_sweep;
pub mod fairshare;
pub mod fairshare_normalization;
pub mod fairshare_queue;
pub mod fairshare_suitability;
pub mod ptg;
pub mod staging;
pub mod two_level;
pub mod variants;
