//! `hetpilot simulate live`: the control plane driven without a manager, through the same
//! [`Control`](super::Control) methods the live manager calls.
//! - [`simulate`] runs a [`Scenario`] (hand-written, or the live run a journal records,
//!   with its measured runtimes) with simulated agents, batch-queue waits and rounds;
//! - [`replay_trace`] replays a parallel-job trace (SWF) through it, to compare with
//!   `simulate alloc`;
//! - [`replay`] feeds a live manager's journal back through a fresh control plane and
//!   checks every decision comes out the same.

mod replay;
mod scenario;
mod trace;
#[cfg(test)]
mod trace_tests;
mod world;
#[cfg(test)]
mod world_timing_tests;

pub use replay::{replay, ReplayError, ReplaySummary};
pub use scenario::{Scenario, ScenarioApp, ScenarioError, ScenarioPlatform};
pub use trace::{
    check_records, replay_trace, scenario_of, TraceError, TraceSettings, MAX_TRACE_JOBS,
};
pub use world::{simulate, simulate_journaled, AllocationRecord, SimError, SimOutcome};
