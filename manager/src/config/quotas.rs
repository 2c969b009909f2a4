//! Per-user quotas (`[quotas]`) and the lifetime of registration tokens: what one user may
//! put in the manager, so that no single submit or upload can exhaust it for everyone.

use serde::Deserialize;

/// `[quotas]`: limits per user. The defaults fit 10^7-task applications.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Quotas {
    /// Most tasks one submitted application may have.
    pub tasks_per_submit: u64,
    /// Most tasks one user may have waiting, leased or running at once.
    pub queued_tasks_per_user: u64,
    /// Most tasks the manager keeps for one user, ended ones included (until they are
    /// forgotten: `hetpilot app forget`, `hetpilot purge` or `[retention]`).
    pub stored_tasks_per_user: u64,
    /// Most bytes one user may keep in the manager's file service (GiB). (The largest
    /// single upload is `[limits] max_file_mib`.)
    pub file_service_gib_per_user: u64,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            tasks_per_submit: 10_000_000,
            queued_tasks_per_user: 20_000_000,
            stored_tasks_per_user: 40_000_000,
            file_service_gib_per_user: 1024,
        }
    }
}

impl Quotas {
    /// The first setting that makes no sense, as (field, problem).
    pub fn problem(&self) -> Option<(&'static str, String)> {
        for (field, v) in [
            ("quotas.tasks_per_submit", self.tasks_per_submit),
            ("quotas.queued_tasks_per_user", self.queued_tasks_per_user),
            ("quotas.stored_tasks_per_user", self.stored_tasks_per_user),
            (
                "quotas.file_service_gib_per_user",
                self.file_service_gib_per_user,
            ),
        ] {
            if v == 0 {
                return Some((field, "must be at least 1".into()));
            }
        }
        if self.file_service_gib_per_user > 1 << 30 {
            return Some(("quotas", "sizes above 2^30 GiB are not plausible".into()));
        }
        None
    }

    pub fn file_service_bytes_per_user(&self) -> u64 {
        self.file_service_gib_per_user << 30
    }
}

/// Default lifetime of a registration token made by `hetpilot token agent`: one day.
pub fn default_agent_token_ttl_secs() -> u64 {
    24 * 3600
}

/// Longest lifetime a registration token may be given: 30 days.
pub fn default_agent_token_max_ttl_secs() -> u64 {
    30 * 24 * 3600
}
