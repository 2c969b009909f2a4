//! Small views the dashboard reads besides the CLI's: who the token belongs to
//! (`GET /v1/whoami`) and the bytes task staging moved per platform, beside what the
//! Het-HPS plans predicted (`GET /v1/staging`).

use serde::{Deserialize, Serialize};

/// The caller of `GET /v1/whoami`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WhoAmI {
    /// The user's name.
    pub user: String,
    /// Whether the token is an admin's (sees every application, pilots and agents).
    pub admin: bool,
}

/// Bytes task staging moved on one platform since the manager started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StagingBytes {
    /// The platform.
    pub platform: String,
    /// Bytes fetched from sources (cache misses).
    pub fetched: u64,
    /// Bytes of inputs found in the nodes' caches.
    pub cached: u64,
    /// Bytes of outputs stored back.
    pub stored: u64,
    /// Input bytes the Het-HPS plans installed since then predicted this platform's
    /// agents would stage (each plan's distinct files per agent, caches not known).
    #[serde(default)]
    pub planned: u64,
}

/// What the manager kept of the recent past for the dashboard's charts
/// (`GET /v1/history`), oldest sample first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct History {
    /// How often a sample is taken.
    pub interval_ms: u64,
    /// The samples, oldest first (at most a fixed number: the window slides).
    pub samples: Vec<HistorySample>,
}

/// The state at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistorySample {
    /// When it was taken (unix ms).
    pub at_ms: u64,
    /// The fairness of the allocation (1 − σ/μ), when there was one to measure.
    pub fairness: Option<f64>,
    /// Tasks ended so far by each application that was running (the caller's own, unless
    /// an admin asks).
    pub apps: Vec<AppEnded>,
}

/// One application's ended tasks in a [`HistorySample`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppEnded {
    /// The application.
    pub app: crate::AppId,
    /// Its tasks that ended, done or failed (what the dashboard's throughput counts).
    pub ended: u64,
}
