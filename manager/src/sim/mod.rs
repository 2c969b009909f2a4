//! Discrete-event, trace-driven simulators that drive the same policy code as the live
//! manager.

pub mod staging;
