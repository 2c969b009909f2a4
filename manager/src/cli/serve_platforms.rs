//! `serve`'s platforms: the provisioner over the configured profiles, their checks (those
//! of `hetpilot platforms check`, without `--probe`) run in the background at start, and
//! reloads. `hetpilot platforms reload` (`POST /v1/platforms/reload`) and SIGHUP re-read
//! the configuration's platforms and their profiles, restart the provisioning loops over
//! them (the pilots keep running: the new loops follow them) and re-check them. Profiles
//! that cannot be read leave the running ones in place.

use super::check_output;
use super::platforms::{check_one, CheckArgs};
use super::serve::Args;
use hetpilot::config::ProvisionConfig;
use hetpilot::provision::provisioner::{self, Provisioning};
use hetpilot::provision::{catalog, reconcile, PlatformProfile};
use hetpilot::service::{Manager, ReloadReply};
use hetpilot_protocol::pilots::PlatformsReloaded;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Mutex};
use tokio::task::JoinHandle;

/// What a reload needs, and the provisioner it replaces.
pub struct ServedPlatforms {
    manager: Arc<Manager>,
    args: Args,
    /// The URL pilots reach the manager at.
    advertise: String,
    /// The fingerprint pilots pin (kept across reloads: the certificate does not change).
    tls_fingerprint: Option<String>,
    provisioning: Option<Provisioning>,
}

impl ServedPlatforms {
    /// Starts provisioning `profiles` and checking them in the background.
    pub fn start(
        manager: Arc<Manager>,
        args: Args,
        profiles: Vec<PlatformProfile>,
        advertise: String,
        provision: ProvisionConfig,
    ) -> ServedPlatforms {
        let mut served = ServedPlatforms {
            manager,
            args,
            advertise,
            tls_fingerprint: provision.manager_tls_fingerprint.clone(),
            provisioning: None,
        };
        served.provision(profiles, provision);
        served
    }

    fn provision(&mut self, profiles: Vec<PlatformProfile>, mut provision: ProvisionConfig) {
        provision.manager_tls_fingerprint = self.tls_fingerprint.clone();
        self.manager.use_profiles(&profiles);
        let names: Vec<String> = profiles.iter().map(|p| p.name.clone()).collect();
        let round = self.manager.begin_platform_checks(&names);
        let policy = reconcile::Policy::of(&provision);
        check_in_background(&self.manager, round, &profiles, &self.advertise, policy);
        self.provisioning = Some(provisioner::start(
            &self.manager,
            profiles,
            self.advertise.clone(),
            provision,
        ));
    }

    /// Re-reads the configuration's platforms and their profiles; on success restarts
    /// provisioning over them and re-checks them.
    async fn reload(&mut self) -> Result<PlatformsReloaded, String> {
        let settings = self.args.settings().map_err(|e| format!("{e:#}"))?;
        let profiles = catalog::load_all(&settings).map_err(|e| e.to_string())?;
        if let Some(old) = self.provisioning.take() {
            old.shutdown(&self.manager, false).await;
        }
        let platforms: Vec<String> = profiles.iter().map(|p| p.name.clone()).collect();
        self.provision(profiles, settings.provision.clone());
        tracing::info!(?platforms, "platform profiles reloaded; checking them");
        Ok(PlatformsReloaded { platforms })
    }

    /// Stops provisioning; with `cancel`, cancels the pilots still queued or running.
    pub async fn shutdown(&mut self, cancel: bool) -> usize {
        match self.provisioning.take() {
            Some(p) => p.shutdown(&self.manager, cancel).await,
            None => 0,
        }
    }
}

/// Answers reload requests from the API and SIGHUP until aborted (hold the lock to stop
/// it between reloads).
pub fn serve_reloads(served: Arc<Mutex<ServedPlatforms>>) -> anyhow::Result<JoinHandle<()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangups = signal(SignalKind::hangup())?;
    let (tx, mut requests) = mpsc::channel::<ReloadReply>(4);
    {
        let manager = served.try_lock().map(|s| s.manager.clone());
        match manager {
            Ok(m) => m.accept_platform_reloads(tx),
            Err(_) => anyhow::bail!("the platforms are busy"),
        }
    }
    Ok(tokio::spawn(async move {
        loop {
            let reply = tokio::select! {
                Some(()) = hangups.recv() => None,
                Some(reply) = requests.recv() => Some(reply),
                else => break,
            };
            let result = served.lock().await.reload().await;
            match (&result, reply) {
                (_, Some(reply)) => {
                    let _ = reply.send(result);
                }
                (Ok(_), None) => {}
                (Err(why), None) => {
                    tracing::error!(error = %why, "SIGHUP: the profiles were not reloaded (the running ones are kept)");
                }
            }
        }
    }))
}

/// Runs each profile's checks on the blocking pool and records the result in `round`;
/// a platform that fails them is checked again on `policy`'s backoff until it passes or
/// a newer round (a reload) begins.
fn check_in_background(
    manager: &Arc<Manager>,
    round: u64,
    profiles: &[PlatformProfile],
    url: &str,
    policy: reconcile::Policy,
) {
    for profile in profiles {
        let (manager, profile, url) = (manager.clone(), profile.clone(), url.to_string());
        tokio::spawn(async move {
            loop {
                let failure = check_blocking(&profile, &url).await;
                let again = manager.finish_platform_check(
                    round,
                    &profile.name,
                    profile.adapter.name(),
                    failure,
                    &policy,
                );
                let Some(retry_at_ms) = again else { break };
                let wait = retry_at_ms.saturating_sub(hetpilot::service::now_ms());
                tokio::time::sleep(Duration::from_millis(wait)).await;
                if !manager.platform_check_round_is(round) {
                    break;
                }
            }
        });
    }
}

/// `profile`'s checks, run on the blocking pool: why they failed, if they did.
async fn check_blocking(profile: &PlatformProfile, url: &str) -> Option<String> {
    let (profile, url) = (profile.clone(), url.to_string());
    let checked = tokio::task::spawn_blocking(move || {
        let args = CheckArgs {
            dry_run: false,
            probe: false,
            probe_timeout: Duration::ZERO,
        };
        check_output::capture(|| check_one(&profile, &url, &args))
    })
    .await;
    match checked {
        Ok((0, _)) => None,
        Ok((failed, lines)) => Some(failure_reason(failed, &lines)),
        Err(e) => Some(format!("the platform's checks did not finish: {e}")),
    }
}

/// The failed checks' lines, as one reason.
fn failure_reason(failed: usize, lines: &[String]) -> String {
    let fails: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.trim_start().strip_prefix("FAIL"))
        .map(str::trim)
        .collect();
    if fails.is_empty() {
        format!("{failed} platform checks failed (see `hetpilot platforms check`)")
    } else {
        format!("platform check failed: {}", fails.join("; "))
    }
}
