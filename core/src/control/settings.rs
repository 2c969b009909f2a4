//! What the control plane is configured with: the `[scheduler]` and `[fairshare]`
//! sections, the lease timeout and the file stores' configured I/O bandwidths. The shell
//! builds it from the manager's configuration; the simulator from its scenario.

use super::{FairshareConfig, SchedulerConfig};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How the control plane decides (see the module doc).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlSettings {
    /// The `[scheduler]` section: the policy, its knobs and the round interval.
    pub scheduler: SchedulerConfig,
    /// The `[fairshare]` section: the penalty, shares and decay.
    pub fairshare: FairshareConfig,
    /// An agent silent for this long is lost and its tasks go back to their queues (more
    /// agents than `heartbeats_per_second` allows stretch it: `queue::heartbeat_cadence`).
    pub lease_timeout_ms: u64,
    /// The most heartbeats per second the agents' cadence aims for; none (journals from
    /// before it existed, simulations): a fixed cadence.
    #[serde(default)]
    pub heartbeats_per_second: Option<u32>,
    /// The I/O bandwidth configured for each file store, by endpoint (`store:NAME`), MiB/s.
    pub store_io_mib_per_s: HashMap<String, f64>,
}
