//! The platform checks `serve` runs in the background at start and after every reload of
//! the profiles (`hetpilot platforms reload`, `POST /v1/platforms/reload`, SIGHUP), as the
//! manager keeps their results: a platform that failed its checks is unavailable with the
//! failed checks as its reason, and the provisioner submits no pilot to it, until a later
//! round passes. Each reload starts a new round and forgets the old results, so a reason
//! that stopped being true is not shown, and a slow check of a replaced profile cannot
//! overwrite a newer result.

use super::users::admin;
use super::{now_ms, Manager, Principal, ServiceError};
use hetpilot_protocol::pilots::{PlatformStatus, PlatformsReloaded};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Where `serve` answers a reload: the platforms now configured, or why the profiles
/// could not be read (the running ones are kept then).
pub type ReloadReply = oneshot::Sender<Result<PlatformsReloaded, String>>;

/// How long a reload request waits for `serve` to re-read the profiles (the checks run
/// after the answer, in the background).
const RELOAD_WAIT: Duration = Duration::from_secs(60);

impl Manager {
    /// Makes `POST /v1/platforms/reload` send its requests to `reloads` (`serve` calls this
    /// once; a manager without it refuses reloads).
    pub fn accept_platform_reloads(&self, reloads: mpsc::Sender<ReloadReply>) {
        if self.platform_reloads.set(reloads).is_err() {
            tracing::warn!("platform reloads were already accepted elsewhere; keeping the first");
        }
    }

    /// Starts a round of checks of `platforms` (the configured ones): forgets every earlier
    /// result, and the statuses of platforms no longer configured. Returns the round, for
    /// [`Self::finish_platform_check`].
    pub fn begin_platform_checks(&self, platforms: &[String]) -> u64 {
        let mut book = self.book();
        book.check_round = book.check_round.saturating_add(1);
        book.check_failures.clear();
        book.platforms.retain(|name, _| platforms.contains(name));
        book.check_round
    }

    /// Records the result of platform `name`'s checks in `round`: `Some(reason)` when some
    /// failed. Shown at once in its status; dropped when a newer round began.
    pub fn finish_platform_check(
        &self,
        round: u64,
        name: &str,
        adapter: &str,
        failure: Option<String>,
    ) {
        let mut book = self.book();
        if book.check_round != round {
            return;
        }
        match failure {
            Some(reason) => {
                tracing::warn!(platform = %name, %reason, "platform failed its checks; no pilot is submitted to it until a reload passes them");
                book.check_failures.insert(name.to_string(), reason.clone());
                let status =
                    book.platforms
                        .entry(name.to_string())
                        .or_insert_with(|| PlatformStatus {
                            name: name.to_string(),
                            adapter: adapter.to_string(),
                            available: false,
                            reason: String::new(),
                            failures: 0,
                            retry_at_ms: 0,
                            checked_at_ms: 0,
                            demand_cores: 0,
                        });
                status.available = false;
                status.reason = reason;
                status.checked_at_ms = now_ms();
            }
            None => tracing::info!(platform = %name, "platform passed its checks"),
        }
    }

    /// Why platform `name` failed its latest checks, if it did.
    pub fn platform_check_failure(&self, name: &str) -> Option<String> {
        self.book().check_failures.get(name).cloned()
    }

    /// Re-reads the profiles and re-checks them (admin), through `serve`.
    pub async fn reload_platforms(
        &self,
        who: &Principal,
    ) -> Result<PlatformsReloaded, ServiceError> {
        admin(who)?;
        let reloads = self.platform_reloads.get().ok_or_else(|| {
            ServiceError::Conflict("this manager does not reload platform profiles".into())
        })?;
        let (reply, answer) = oneshot::channel();
        reloads
            .send(reply)
            .await
            .map_err(|_| ServiceError::Conflict("the manager is stopping".into()))?;
        match tokio::time::timeout(RELOAD_WAIT, answer).await {
            Ok(Ok(Ok(reloaded))) => Ok(reloaded),
            Ok(Ok(Err(why))) => Err(ServiceError::BadRequest(format!(
                "the profiles were not reloaded (the running ones are kept): {why}"
            ))),
            Ok(Err(_)) => Err(ServiceError::Conflict("the manager is stopping".into())),
            Err(_) => Err(ServiceError::Conflict(format!(
                "the profiles were not re-read within {}s",
                RELOAD_WAIT.as_secs()
            ))),
        }
    }
}
