//! The platform checks `serve` runs in the background at start and after every reload of
//! the profiles (`hetpilot platforms reload`, `POST /v1/platforms/reload`, SIGHUP), as the
//! manager keeps their results: a platform that failed its checks is unavailable with the
//! failed checks as its reason, and the provisioner submits no pilot to it, until they
//! pass. Failed checks run again on the provisioner's backoff schedule (`[provision]
//! backoff_base_secs` doubling up to `backoff_max_secs`), so a login host that was down at
//! start is used once it answers, without a reload. Each reload starts a new round and
//! forgets the old results, so a reason that stopped being true is not shown, and a slow
//! check of a replaced profile cannot overwrite a newer result.

use super::users::admin;
use super::{now_ms, Manager, Principal, ServiceError};
use crate::provision::reconcile::Policy;
use crate::provision::CheckFailure;
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
        let mut book = self.platform_state();
        book.check_round = book.check_round.saturating_add(1);
        book.check_failures.clear();
        book.platforms.retain(|name, _| platforms.contains(name));
        book.check_round
    }

    /// Records the result of platform `name`'s checks in `round`: `Some(reason)` when some
    /// failed. Shown at once in its status. Returns when to check it again: after a failure
    /// in a round still current, on `policy`'s backoff; `None` once it passed or a newer
    /// round began.
    pub fn finish_platform_check(
        &self,
        round: u64,
        name: &str,
        adapter: &str,
        failure: Option<String>,
        policy: &Policy,
    ) -> Option<u64> {
        let mut book = self.platform_state();
        if book.check_round != round {
            return None;
        }
        let Some(reason) = failure else {
            if book.check_failures.remove(name).is_some() {
                tracing::warn!(platform = %name, "platform passes its checks again");
            } else {
                tracing::info!(platform = %name, "platform passed its checks");
            }
            return None;
        };
        let now = now_ms();
        let earlier = book
            .check_failures
            .get(name)
            .map(|f| f.backoff)
            .unwrap_or_default();
        let backoff = earlier.failed(now, policy);
        if earlier.failures == 0 {
            tracing::warn!(platform = %name, %reason, "platform failed its checks; no pilot is submitted to it until they pass (checked again on the backoff schedule, and on reload)");
        }
        book.check_failures.insert(
            name.to_string(),
            CheckFailure {
                reason: reason.clone(),
                backoff,
            },
        );
        let status = book
            .platforms
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
        status.failures = backoff.failures;
        status.retry_at_ms = backoff.retry_at_ms;
        status.checked_at_ms = now;
        Some(backoff.retry_at_ms)
    }

    /// Whether `round` is still the current round of platform checks.
    pub fn platform_check_round_is(&self, round: u64) -> bool {
        self.platform_state().check_round == round
    }

    /// Why platform `name` failed its latest checks, if it did.
    pub fn platform_check_failure(&self, name: &str) -> Option<CheckFailure> {
        self.platform_state().check_failures.get(name).cloned()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ManagerConfig;
    use crate::provision::PilotHost;

    fn policy() -> Policy {
        Policy {
            register_timeout_ms: 60_000,
            replace_lead_ms: 0,
            backoff_base_ms: 1_000,
            backoff_max_ms: 4_000,
            idle_timeout_ms: 0,
        }
    }

    #[tokio::test]
    async fn failed_checks_back_off_until_they_pass_and_a_new_round_forgets_them() {
        let dir = tempfile::tempdir().unwrap();
        let settings =
            ManagerConfig::load(None, &[("data_dir", dir.path().display().to_string())]).unwrap();
        let m = Manager::open(settings).unwrap();
        let round = m.begin_platform_checks(&["lab".into()]);
        let why = || Some("platform check failed: login host down".to_string());

        let mut waits = Vec::new();
        for _ in 0..4 {
            let before = now_ms();
            let again = m
                .finish_platform_check(round, "lab", "slurm", why(), &policy())
                .expect("checked again after a failure");
            waits.push((again - before) / 1000);
        }
        // base × 2^(failures−1), capped at the maximum (a second of slack for the clock).
        assert!(
            waits
                .iter()
                .zip([1, 2, 4, 4])
                .all(|(w, want)| *w == want || *w + 1 == want),
            "{waits:?}"
        );
        let failed = m.check_failure("lab").expect("still failing");
        assert_eq!(failed.backoff.failures, 4);
        let status = m.platform_state().platforms["lab"].clone();
        assert!(!status.available && status.reason.contains("login host down"));
        assert_eq!(
            (status.failures, status.retry_at_ms),
            (4, failed.backoff.retry_at_ms)
        );

        // Passing clears it: no more re-checks, nothing holds submissions back.
        assert_eq!(
            m.finish_platform_check(round, "lab", "slurm", None, &policy()),
            None
        );
        assert_eq!(m.check_failure("lab"), None);

        // A result from a round a reload replaced is dropped and not checked again.
        m.finish_platform_check(round, "lab", "slurm", why(), &policy());
        let newer = m.begin_platform_checks(&["lab".into()]);
        assert!(!m.platform_check_round_is(round) && m.platform_check_round_is(newer));
        assert_eq!(
            m.check_failure("lab"),
            None,
            "a new round forgets old results"
        );
        assert_eq!(
            m.finish_platform_check(round, "lab", "slurm", why(), &policy()),
            None
        );
        assert_eq!(m.check_failure("lab"), None);
    }
}
