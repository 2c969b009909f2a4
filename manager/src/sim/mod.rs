//! Trace-driven simulators that drive the same pure policy code as the live manager.

pub mod alloc;
pub mod alloc_setup;
pub mod fairshare;
pub mod fairshare_queue;
