//! What an agent's GPUs and named counts look like to an admin (`GET /v1/agents`,
//! `hetpilot agents`, the dashboard): each device with how much of it runs hold now, and
//! each named count offered and in use, as the manager's lease pool counts them.

use crate::resources::GpuDevice;
use serde::{Deserialize, Serialize};

/// One GPU an agent offers, and its use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentGpu {
    /// The device as the agent registered it (index, UUID, model, memory, vendor).
    #[serde(flatten)]
    pub device: GpuDevice,
    /// How much of it the runs the agent holds were granted: 0 (free) to 1 (whole).
    pub in_use: f64,
    /// How many of those runs share it.
    pub tasks: u64,
}

/// One named count an agent offers (`licenses`, `fpga`), and its use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentResource {
    /// The resource's name.
    pub name: String,
    /// How much the agent offers.
    pub offered: f64,
    /// How much of it the runs the agent holds were granted.
    pub in_use: f64,
}
