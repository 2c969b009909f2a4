//! Discrete-event, trace-driven simulators that drive the pure policy code: one submodule
//! per kind of experiment, plus the event queue they share.

pub mod event_queue;
pub mod two_level;
