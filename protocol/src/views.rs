//! What the running manager shows of its scheduling, read by `hetpilot schedule`, `usage`
//! and `bandwidths`: the last round's allocation (`GET /v1/schedule`), fairshare usage per
//! user (`GET /v1/usage`) and the bandwidths measured between platforms and storage
//! endpoints (`GET /v1/bandwidths`).

use crate::AppId;
use serde::{Deserialize, Serialize};

/// The last scheduling round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScheduleView {
    /// The policies, e.g. `pa-rr(rpa) + maf(normalized)`; `round-robin` without rounds.
    pub policy: String,
    /// When the round ran (unix ms); 0 when none has run yet.
    pub at_ms: u64,
    /// The round's number: the rounds whose decisions took effect since the manager
    /// started are numbered from 1 (0: none yet). Views numbered n and n + 1 show
    /// consecutive rounds, with no other between them.
    #[serde(default)]
    pub round: u64,
    /// When its decisions took effect (unix ms): leases from then on follow it, those
    /// before followed the round before. 0 when none has, or in a simulation.
    #[serde(default)]
    pub effective_ms: u64,
    /// The platforms that had agents, in the order of every per-platform list.
    pub platforms: Vec<PlatformView>,
    /// Every application the round allocated to.
    pub apps: Vec<AppAllocation>,
    /// For applications that declare variants: which variant runs on each platform and
    /// the cores and GPUs its tasks got there (the variant round's plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantAllocation>,
}

/// One variant of an application that the last variant round runs on one platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VariantAllocation {
    /// The application.
    pub app: AppId,
    /// Its name, as submitted.
    pub name: String,
    /// The platform.
    pub platform: String,
    /// The variant's name.
    pub variant: String,
    /// Tasks of it the platform runs at once.
    pub tasks: u64,
    /// Cores those tasks hold in all.
    pub cores: u64,
    /// GPUs those tasks hold in all (fractions add up).
    pub gpus: f64,
}

/// A platform that had agents in the round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlatformView {
    /// The platform's name.
    pub name: String,
    /// Its agents that could take tasks.
    pub agents: u32,
    /// Their slots in all.
    pub slots: u64,
    /// Relative speed measured so far (1 = the reference).
    pub speed: f64,
}

/// One application's allocation, indexed like [`ScheduleView::platforms`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppAllocation {
    /// The application.
    pub app: AppId,
    /// Its name, as submitted.
    pub name: String,
    /// The user who submitted it.
    pub owner: String,
    /// The owner's weight in the first level (fairshare priority, or 1).
    pub weight: f64,
    /// Cores (slots) given to the application on each platform.
    pub cores: Vec<u32>,
    /// Mean task runtime on each platform, seconds (measured, or the prior).
    pub runtime_s: Vec<f64>,
    /// Successful runs measured on each platform.
    pub samples: Vec<u64>,
    /// For a multi-core application: the platform TLPA chose for its next tasks.
    #[serde(default)]
    pub placed_on: Option<String>,
}

/// One user's fairshare standing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserUsage {
    /// The user's name.
    pub user: String,
    /// Everything charged so far (core-seconds normalized by platform speed, times the
    /// multi-resource penalty).
    pub usage: f64,
    /// The same with exponential decay applied.
    pub decayed_usage: f64,
    /// Fairshare factor 2^(-U/S) in (0, 1]: higher goes first.
    pub priority: f64,
}

/// The measured bandwidth between one platform and one storage endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BandwidthRow {
    /// The platform the transfers ran on.
    pub platform: String,
    /// `manager` (the file service), `http://host:port`, `sftp://host:port`, `store:NAME`.
    pub endpoint: String,
    /// Transfers measured since the manager's state began.
    pub transfers: u64,
    /// Bytes moved by the transfers the estimate is made of (the most recent ones).
    pub window_bytes: u64,
    /// Their bytes over their seconds, MiB/s.
    pub mib_per_s: f64,
}
