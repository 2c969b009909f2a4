//! What the dashboard reads besides the CLI's views: the caller's identity, the online
//! affinity tables (computed off the control lock) and the bytes staging moved.

use super::users::user;
use super::{Manager, Principal, ServiceError};
use hetpilot_protocol::affinity_view::AffinityView;
use hetpilot_protocol::dashboard::{StagingBytes, WhoAmI};

impl Manager {
    /// The user a token belongs to.
    pub fn whoami(&self, who: &Principal) -> Result<WhoAmI, ServiceError> {
        let (name, admin) = user(who)?;
        Ok(WhoAmI {
            user: name.to_string(),
            admin,
        })
    }

    /// The affinity tables of the unfinished applications from the runtimes measured so
    /// far; a user sees only their own applications' rows.
    pub async fn affinity(&self, who: &Principal) -> Result<AffinityView, ServiceError> {
        let (name, admin) = user(who)?;
        let name = name.to_string();
        let job = self.control().affinity_job();
        let mut view = tokio::task::spawn_blocking(move || job.compute())
            .await?
            .map_err(|e| ServiceError::Conflict(format!("the live profile is unusable: {e}")))?;
        if !admin {
            view.retain_apps(|a| a.owner == name);
        }
        Ok(view)
    }

    /// Bytes staging moved per platform (any user: they describe platforms).
    pub fn staging_bytes(&self, who: &Principal) -> Result<Vec<StagingBytes>, ServiceError> {
        user(who)?;
        Ok(self
            .metrics
            .staging_totals()
            .into_iter()
            .map(
                |(platform, [fetched, cached, stored, planned])| StagingBytes {
                    platform,
                    fetched,
                    cached,
                    stored,
                    planned,
                },
            )
            .collect())
    }
}
