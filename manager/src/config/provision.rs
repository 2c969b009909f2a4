//! The provisioner's knobs (`[provision]` in the manager's configuration).
//!
//! ```toml
//! [provision]
//! interval_secs = 5           # one poll of every platform's batch jobs per interval
//! register_timeout_secs = 300 # a running job whose agent has not registered is cancelled
//! replace_lead_secs = 600     # pilots with less walltime left are replaced ahead of time
//! backoff_base_secs = 5       # after a failure, wait base × 2^(failures−1) ...
//! backoff_max_secs = 600      # ... at most this long
//! credential_ttl_secs = 86400 # a pilot's registration credential expires after this
//! cancel_on_shutdown = true   # a manager stopped by SIGTERM/SIGINT cancels its pilots
//! pilot_dir_retention_secs = 86400 # an ended pilot's directory is removed this long after
//!                             #   (its batch output kept in DATA_DIR/pilot-logs/); 0: never
//! idle_timeout_secs = 60      # a pilot whose agent held no task this long, while nothing
//!                             #   waits for its platform, is drained; 0: at once
//! ```

use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ProvisionConfig {
    pub interval_secs: f64,
    pub register_timeout_secs: f64,
    pub replace_lead_secs: f64,
    pub backoff_base_secs: f64,
    pub backoff_max_secs: f64,
    pub credential_ttl_secs: f64,
    /// How long a running pilot's agent may hold no task, while no task waits for its
    /// platform, before it is drained: a workflow's serial step (a split, a merge) between
    /// parallel ones does not send its pilots away. HyperQueue's automatic allocation
    /// waits 5 minutes by default; a minute here, as pilots hold whole nodes.
    pub idle_timeout_secs: f64,
    /// Whether `hetpilot serve`, stopped cleanly (SIGTERM, SIGINT), cancels the batch jobs
    /// of its pilots that are still queued or running. `false` keeps them for a manager
    /// restarted soon after (their agents wait `--give-up-secs` for it).
    pub cancel_on_shutdown: bool,
    /// How long an ended pilot's directory (`<work_dir>/<pilot>/`) stays on its platform.
    pub pilot_dir_retention_secs: DirRetention,
    /// The SHA-256 fingerprint of the manager's HTTPS certificate, which pilots' agents pin
    /// (`HETPILOT_TLS_FINGERPRINT`); set by `hetpilot serve`, not configured.
    #[serde(skip)]
    pub manager_tls_fingerprint: Option<String>,
}

impl Default for ProvisionConfig {
    fn default() -> Self {
        ProvisionConfig {
            interval_secs: 5.0,
            register_timeout_secs: 300.0,
            replace_lead_secs: 600.0,
            backoff_base_secs: 5.0,
            backoff_max_secs: 600.0,
            credential_ttl_secs: 86400.0,
            idle_timeout_secs: 60.0,
            cancel_on_shutdown: true,
            pilot_dir_retention_secs: DirRetention(DirRetention::DEFAULT_SECS),
            manager_tls_fingerprint: None,
        }
    }
}

/// Seconds an ended pilot's directory is kept; 0: for ever. Out of range is refused when
/// the configuration is read (a file's error names its line).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(try_from = "u64")]
pub struct DirRetention(u64);

impl DirRetention {
    /// A day: time to look into a failed pilot's work files; its batch output is kept by
    /// the manager anyway, and a busy platform's pilot directories do not pile up.
    pub const DEFAULT_SECS: u64 = 86_400;
    /// A year.
    pub const MAX_SECS: u64 = 365 * 86_400;

    /// How long after its end a pilot's directory is removed; `None`: never.
    pub fn after_ms(self) -> Option<u64> {
        (self.0 > 0).then(|| self.0.saturating_mul(1000))
    }
}

impl TryFrom<u64> for DirRetention {
    type Error = String;

    fn try_from(secs: u64) -> Result<Self, String> {
        if secs > Self::MAX_SECS {
            return Err(format!(
                "pilot_dir_retention_secs = {secs} is over a year ({} s); 0 keeps pilot \
                 directories for ever",
                Self::MAX_SECS
            ));
        }
        Ok(DirRetention(secs))
    }
}

/// Seconds as milliseconds (negative ones as 0).
pub fn ms(secs: f64) -> u64 {
    (secs.max(0.0) * 1000.0) as u64
}

impl ProvisionConfig {
    pub fn interval(&self) -> Duration {
        Duration::from_millis(ms(self.interval_secs).max(100))
    }

    pub fn credential_ttl_ms(&self) -> u64 {
        ms(self.credential_ttl_secs)
    }
}
