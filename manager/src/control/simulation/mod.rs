//! `hetpilot simulate live`: the control plane driven without a manager. [`replay`] feeds
//! a live manager's journal back through a fresh [`Control`](super::Control) and checks
//! every decision.

mod replay;

pub use replay::{replay, ReplayError, ReplaySummary};
