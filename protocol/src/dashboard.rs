//! Small views the dashboard reads besides the CLI's: who the token belongs to
//! (`GET /v1/whoami`) and the bytes task staging moved per platform (`GET /v1/staging`).

use serde::{Deserialize, Serialize};

/// The caller of `GET /v1/whoami`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoAmI {
    /// The user's name.
    pub user: String,
    /// Whether the token is an admin's (sees every application, pilots and agents).
    pub admin: bool,
}

/// Bytes task staging moved on one platform since the manager started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagingBytes {
    /// The platform.
    pub platform: String,
    /// Bytes fetched from sources (cache misses).
    pub fetched: u64,
    /// Bytes of inputs found in the nodes' caches.
    pub cached: u64,
    /// Bytes of outputs stored back.
    pub stored: u64,
}
