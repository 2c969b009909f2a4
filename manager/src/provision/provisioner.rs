//! The provisioner's I/O loop: one tokio task per platform with a profile. Every interval
//! it polls all of the platform's tracked batch jobs with ONE adapter call (on the blocking
//! pool: adapters and SSH are blocking), feeds [`reconcile::decide`], and carries out its
//! decisions: records transitions, cancels jobs, drains idle agents, submits new pilots
//! (each with its own credential written on the platform, mode 0600, before submission).
//! A platform whose login host or batch system fails, or whose pilots keep failing the same
//! way ([`REPEATED_FAILURES`] in a row), is marked unavailable with the reason and backs off
//! exponentially; the other platforms' tasks are not affected. Pilot failures and changes
//! of a platform's availability are logged at WARN.

use super::adapter::{adapter_for, AdapterError, BatchAdapter, BatchJobId, JobState, PilotSpec};
use super::host::{AgentActivity, PilotHost};
use super::profile::{PilotSharing, PlatformProfile};
use super::reconcile::{self, Backoff, Caps, Input, PilotView};
use super::runner::{self, CommandRunner, RunnerError};
pub use super::shutdown::Provisioning;
use crate::clock::now_ms;
use crate::config::ProvisionConfig;
use crate::control::PilotEvent;
use hetpilot_protocol::pilots::PlatformStatus;
use hetpilot_protocol::pilots::{PilotRecord, PilotState};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use tokio::sync::watch;

/// One platform the provisioner manages, opened: its profile with the batch-system adapter
/// and the login-side command runner built from it.
pub struct ManagedPlatform {
    pub profile: PlatformProfile,
    pub adapter: Arc<dyn BatchAdapter>,
    pub runner: Arc<dyn CommandRunner>,
}

impl ManagedPlatform {
    /// The platform of `profile`, with its batch-system adapter and login runner.
    pub fn open(profile: PlatformProfile) -> Result<ManagedPlatform, RunnerError> {
        Ok(ManagedPlatform {
            adapter: Arc::from(adapter_for(profile.adapter)),
            runner: runner::for_login(&profile.login)?,
            profile,
        })
    }
}

/// This many pilots in a row failing for the same reason make their platform unavailable
/// (until its backoff ends; a pilot whose agent registers resets the count).
pub const REPEATED_FAILURES: u32 = 2;

/// The per-platform loop's memory between cycles.
#[derive(Default)]
struct Track {
    backoff: Backoff,
    /// `Some(reason)` while the platform's login side or batch system fails.
    down: Option<String>,
    /// `Some(reason)` while the platform is unavailable because its pilots keep failing
    /// the same way (cleared when the backoff ends, to try one more).
    failing: Option<String>,
    /// The last pilot failure (its reason with numbers blanked) and how many pilots in a
    /// row failed so.
    repeated: (String, u32),
    /// Last failure, shown while the platform backs off.
    last_failure: String,
    /// Round-robin position over the ssh adapter's hosts.
    next_host: usize,
    /// Pilots whose jobs are ending without an exit status, and since when.
    awaiting_exit: HashMap<String, u64>,
    /// Running pilots whose agents hold no task, and since when.
    idle_since: HashMap<String, u64>,
}

/// Starts one provisioning loop per profile; they stop when the manager is dropped or
/// the returned handle shuts them down (and cancels the pilots). A platform whose login
/// cannot even be set up (e.g. its key file is unreadable) is shown unavailable with the
/// reason.
pub fn start<H: PilotHost>(
    manager: &Arc<H>,
    profiles: Vec<PlatformProfile>,
    manager_url: String,
    settings: ProvisionConfig,
) -> Provisioning {
    let (stop, stopped) = watch::channel(false);
    let mut running = Provisioning {
        platforms: Vec::new(),
        stop,
        loops: Vec::new(),
    };
    for profile in profiles {
        let (name, adapter) = (profile.name.clone(), profile.adapter.name());
        let platform = match ManagedPlatform::open(profile) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(platform = %name, error = %e, "platform unavailable");
                manager.set_platform_status(PlatformStatus {
                    name,
                    adapter: adapter.to_string(),
                    available: false,
                    reason: e.to_string(),
                    failures: 1,
                    retry_at_ms: 0,
                    checked_at_ms: now_ms(),
                    demand_cores: 0,
                });
                continue;
            }
        };
        tracing::info!(platform = %name, adapter, "provisioning pilots");
        let weak = Arc::downgrade(manager);
        let url = manager_url.clone();
        let settings = settings.clone();
        let platform = Arc::new(platform);
        running.platforms.push(platform.clone());
        let stopped = stopped.clone();
        running.loops.push(tokio::spawn(async move {
            run(weak, platform, url, settings, stopped).await
        }));
    }
    running
}

async fn run<H: PilotHost>(
    manager: Weak<H>,
    platform: Arc<ManagedPlatform>,
    url: String,
    settings: ProvisionConfig,
    mut stopped: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(settings.interval());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut track = Track::default();
    let mut was_available = true;
    loop {
        // A dropped handle (no shutdown) leaves the loop to the manager's lifetime.
        tokio::select! {
            _ = tick.tick() => {}
            Ok(()) = stopped.changed() => {}
        }
        if *stopped.borrow() {
            break;
        }
        let Some(m) = manager.upgrade() else { break };
        cycle(&m, &platform, &url, &settings, &mut track).await;
        if track.down.is_none() {
            super::pilot_dirs::clean(&m, &platform, &settings).await;
        }
        let name = &platform.profile.name;
        let check_failure = m.check_failure(name);
        let unavailable = track
            .down
            .as_ref()
            .or(track.failing.as_ref())
            .or(check_failure.as_ref().map(|f| &f.reason));
        // The failures shown are those of what makes it unavailable: the failed checks'
        // when only they do.
        let backoff = match &check_failure {
            Some(f) if track.down.is_none() && track.failing.is_none() => f.backoff,
            _ => track.backoff,
        };
        match (was_available, unavailable) {
            // Failed checks were logged when they failed.
            (true, Some(reason)) if check_failure.is_none() => {
                tracing::warn!(platform = %name, %reason, "platform unavailable");
            }
            (false, None) => tracing::warn!(platform = %name, "platform available again"),
            _ => {}
        }
        was_available = unavailable.is_none();
        m.set_platform_status(PlatformStatus {
            name: name.clone(),
            adapter: platform.profile.adapter.name().to_string(),
            available: unavailable.is_none(),
            reason: unavailable.cloned().unwrap_or_else(|| {
                if track.backoff.failures > 0 {
                    track.last_failure.clone()
                } else {
                    String::new()
                }
            }),
            failures: backoff.failures,
            retry_at_ms: backoff.retry_at_ms,
            checked_at_ms: now_ms(),
            demand_cores: 0,
        });
    }
}

/// Runs a blocking adapter call on the blocking pool.
async fn blocking<T: Send + 'static>(
    platform: &Arc<ManagedPlatform>,
    f: impl FnOnce(&ManagedPlatform) -> Result<T, AdapterError> + Send + 'static,
) -> Result<T, String> {
    let p = platform.clone();
    match tokio::task::spawn_blocking(move || f(&p)).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(e) => Err(format!("adapter call aborted: {e}")),
    }
}

/// The login side or batch system answered again: its failure is no longer shown.
fn recovered(track: &mut Track) {
    if track.down.take().is_some() {
        track.last_failure.clear();
    }
}

fn fail(track: &mut Track, now: u64, settings: &ProvisionConfig, reason: String, down: bool) {
    track.backoff = track.backoff.failed(now, &reconcile::Policy::of(settings));
    if down {
        track.down = Some(reason.clone());
    }
    track.last_failure = reason;
}

async fn cycle<H: PilotHost>(
    m: &Arc<H>,
    platform: &Arc<ManagedPlatform>,
    url: &str,
    settings: &ProvisionConfig,
    track: &mut Track,
) {
    let profile = &platform.profile;
    let mut now = now_ms();
    if track.down.is_some() && track.backoff.waiting(now) {
        return;
    }
    if !track.backoff.waiting(now) {
        // Backed off long enough after repeated pilot failures: try again.
        track.failing = None;
    }
    let mut pilots = m.tracked_pilots(&profile.name);
    // A pilot without a batch id was being submitted when the manager stopped.
    pilots.retain(|p| {
        if p.batch_job_id.is_some() {
            return true;
        }
        let lost = PilotEvent::SubmissionLost {
            pilot: p.name.clone(),
        };
        m.pilot_event(lost, now);
        false
    });
    let ids: Vec<BatchJobId> = pilots
        .iter()
        .filter_map(|p| p.batch_job_id.clone().map(BatchJobId))
        .collect();
    let jobs: HashMap<BatchJobId, JobState> = if ids.is_empty() {
        // Nothing to poll: while unavailable, probe the login side before creating pilots.
        if track.down.is_some() {
            let probe = blocking(platform, |p| Ok(p.runner.run(&["true"], None)?)).await;
            if let Err(e) = probe {
                fail(track, now_ms(), settings, e, true);
                return;
            }
            recovered(track);
        }
        HashMap::new()
    } else {
        match blocking(platform, move |p| {
            p.adapter.poll(p.runner.as_ref(), &p.profile, &ids)
        })
        .await
        {
            Ok(jobs) => {
                recovered(track);
                jobs
            }
            Err(e) => {
                tracing::warn!(platform = %profile.name, error = %e, "polling failed; backing off");
                fail(
                    track,
                    now_ms(),
                    settings,
                    format!("polling failed: {e}"),
                    true,
                );
                return;
            }
        }
    };
    now = now_ms();
    let agents: Vec<u64> = pilots.iter().flat_map(|p| p.agent_ids()).collect();
    let activity = m.agent_activity(&agents);
    track.idle_since = pilots
        .iter()
        .filter(|p| {
            // A group is idle when every agent of it is.
            let mut acts = p.agent_ids().filter_map(|a| activity.get(&a)).peekable();
            acts.peek().is_some() && acts.all(|a| a.idle)
        })
        .map(|p| {
            let since = track.idle_since.get(&p.name).copied().unwrap_or(now);
            (p.name.clone(), since)
        })
        .collect();
    let mut awaiting_exit = HashMap::new();
    let mut submitted_earlier = 0u32;
    let mut back_off = false;
    for (user, demand_cores) in groups(m.as_ref(), profile, &pilots) {
        let mine: Vec<&PilotRecord> = pilots.iter().filter(|p| p.user == user).collect();
        // Per-user groups share the platform's caps: what other users' pilots hold (and
        // what this cycle already submitted) is not theirs to take.
        let others = pilots.iter().filter(|p| p.user != user);
        let others_live = others.clone().count() as u32 + submitted_earlier;
        let others_queued =
            others.filter(|p| p.state == PilotState::Queued).count() as u32 + submitted_earlier;
        let caps = Caps {
            max_queued: profile.max_queued.saturating_sub(others_queued),
            max_running: profile.max_running.saturating_sub(others_live),
            // Each of a pilot's nodes brings what one agent registered.
            cores_per_pilot: u64::from(
                m.registered_cores(&profile.name)
                    .unwrap_or(profile.cores_per_node),
            )
            .saturating_mul(u64::from(profile.nodes_per_pilot)),
        };
        let views: Vec<PilotView<'_>> = mine
            .iter()
            .map(|p| view(p, &jobs, &activity, track, profile))
            .collect();
        let input = Input {
            now_ms: now,
            demand_cores,
            caps,
            policy: reconcile::Policy::of(settings),
            backoff: track.backoff,
            pilots: &views,
        };
        let d = reconcile::decide(&input);
        awaiting_exit.extend(d.await_exit.iter().map(|name| {
            let since = track.awaiting_exit.get(name).copied().unwrap_or(now);
            (name.clone(), since)
        }));
        back_off |= d.back_off;
        apply(m, platform, &mine, &d, now, track, settings).await;
        // A platform that failed its checks gets no pilot until they pass.
        let submissions = if m.check_failure(&profile.name).is_some() {
            0
        } else {
            d.submit
        };
        for _ in 0..submissions {
            if let Err(e) = submit(m, platform, url, settings, track, user.as_deref()).await {
                tracing::warn!(platform = %profile.name, error = %e, "submission failed; backing off");
                fail(track, now_ms(), settings, e, true);
                track.awaiting_exit = awaiting_exit;
                return;
            }
            submitted_earlier += 1;
        }
    }
    track.awaiting_exit = awaiting_exit;
    if !back_off && pilots.iter().any(|p| p.state == PilotState::Running) {
        track.backoff = Backoff::default();
        track.repeated = Default::default();
    }
}

/// A failure reason with its numbers blanked (seconds waited, exit codes, job ids), so
/// failures of the same kind compare equal.
fn failure_kind(reason: &str) -> String {
    let mut kind = String::with_capacity(reason.len());
    for c in reason.chars() {
        if !c.is_ascii_digit() {
            kind.push(c);
        } else if !kind.ends_with('#') {
            kind.push('#');
        }
    }
    kind
}

/// The groups of pilots the reconciler decides for, each with its demand: one group on a
/// shared platform; one per user (with waiting work or pilots) on a per-user platform,
/// those with the fewest pilots first so every user gets a pilot before any gets more.
fn groups<H: PilotHost>(
    m: &H,
    profile: &PlatformProfile,
    pilots: &[PilotRecord],
) -> Vec<(Option<String>, u64)> {
    if profile.pilots == PilotSharing::Shared {
        return vec![(None, m.demand_cores(&profile.name))];
    }
    let demand = m.demand_by_user(&profile.name);
    let mut users: Vec<Option<String>> = demand.keys().cloned().map(Some).collect();
    for p in pilots {
        if !users.contains(&p.user) {
            users.push(p.user.clone());
        }
    }
    users.sort_by_key(|u| (pilots.iter().filter(|p| p.user == *u).count(), u.clone()));
    users
        .into_iter()
        .map(|u| {
            let cores = u.as_ref().and_then(|u| demand.get(u)).copied().unwrap_or(0);
            (u, cores)
        })
        .collect()
}

fn view<'a>(
    p: &'a PilotRecord,
    jobs: &'a HashMap<BatchJobId, JobState>,
    activity: &HashMap<u64, AgentActivity>,
    track: &Track,
    profile: &PlatformProfile,
) -> PilotView<'a> {
    let walltime = profile.pilot_walltime.as_millis() as u64;
    // A pilot's group: idle, draining or lost when all its agents are; live while any is.
    let acts: Vec<&AgentActivity> = p.agent_ids().filter_map(|a| activity.get(&a)).collect();
    let all = |f: fn(&AgentActivity) -> bool| !acts.is_empty() && acts.iter().all(|a| f(a));
    let any = |f: fn(&AgentActivity) -> bool| acts.iter().any(|a| f(a));
    PilotView {
        name: &p.name,
        state: p.state,
        job: p
            .batch_job_id
            .as_ref()
            .and_then(|id| jobs.get(&BatchJobId(id.clone()))),
        submitted_ms: p.submitted_ms,
        job_started_ms: p.job_started_ms,
        walltime_end_ms: p
            .walltime_end_ms
            .or(p.job_started_ms.map(|s| s.saturating_add(walltime))),
        agent_idle: all(|a| a.idle),
        idle_since_ms: track.idle_since.get(&p.name).copied(),
        draining: all(|a| a.draining),
        agent_lost: all(|a| a.lost),
        agent_live: any(|a| a.live),
        drain_ordered: any(|a| a.drain_ordered),
        awaiting_exit_since: track.awaiting_exit.get(&p.name).copied(),
    }
}

/// Carries out one group's decisions but submissions: records transitions, cancels jobs,
/// drains idle agents, backs off after a failure that says the platform is broken.
async fn apply<H: PilotHost>(
    m: &Arc<H>,
    platform: &Arc<ManagedPlatform>,
    pilots: &[&PilotRecord],
    d: &reconcile::Decisions,
    now: u64,
    track: &mut Track,
    settings: &ProvisionConfig,
) {
    let profile = &platform.profile;
    let by_name: HashMap<&str, &PilotRecord> =
        pilots.iter().map(|p| (p.name.as_str(), *p)).collect();
    for name in &d.job_started {
        let started = PilotEvent::JobStarted {
            pilot: name.clone(),
        };
        m.pilot_event(started, now);
    }
    for name in &d.release {
        let Some(p) = by_name.get(name.as_str()) else {
            continue;
        };
        // The allocation ended: every agent of its group goes, with what it held.
        let job = p.batch_job_id.as_deref().unwrap_or_default();
        for agent in p.agent_ids() {
            m.pilot_ended(
                agent,
                &format!("the batch job {job} of its pilot {name} ended"),
            );
        }
    }
    let mut moved = HashSet::new();
    for t in &d.transitions {
        let from = by_name[t.pilot.as_str()].state;
        let event = PilotEvent::Moved {
            pilot: t.pilot.clone(),
            from,
            to: t.state,
            reason: t.reason.clone(),
        };
        if m.pilot_event(event, now) {
            let record = by_name[t.pilot.as_str()];
            if d.killed.contains(&t.pilot) {
                tracing::warn!(
                    platform = %profile.name,
                    pilot = %t.pilot,
                    job = %record.batch_job_id.as_deref().unwrap_or_default(),
                    agent = record.agent.unwrap_or_default(),
                    reason = %t.reason,
                    "pilot failed: its batch job ended without the manager asking (cancelled from outside, its node lost, or its agent died); its agent's tasks went back to their queues"
                );
            } else if t.state == PilotState::Failed {
                tracing::warn!(platform = %profile.name, pilot = %t.pilot, reason = %t.reason, "pilot failed");
                let kind = failure_kind(&t.reason);
                if track.repeated.0 == kind {
                    track.repeated.1 += 1;
                } else {
                    track.repeated = (kind, 1);
                }
                if track.repeated.1 >= REPEATED_FAILURES {
                    track.failing = Some(format!(
                        "{} pilots in a row failed: {}",
                        track.repeated.1, t.reason
                    ));
                }
            } else {
                tracing::info!(platform = %profile.name, pilot = %t.pilot, state = t.state.as_str(), reason = %t.reason, "pilot");
            }
            moved.insert(t.pilot.as_str());
        }
    }
    for name in d.cancel.iter().filter(|n| moved.contains(n.as_str())) {
        let Some(id) = by_name
            .get(name.as_str())
            .and_then(|p| p.batch_job_id.clone())
        else {
            continue;
        };
        let job = BatchJobId(id);
        if let Err(e) = blocking(platform, move |p| {
            p.adapter.cancel(p.runner.as_ref(), &p.profile, &job)
        })
        .await
        {
            tracing::warn!(platform = %profile.name, pilot = %name, error = %e, "cancelling failed");
        }
    }
    for name in &d.drain {
        if let Some(p) = by_name.get(name.as_str()) {
            tracing::info!(platform = %profile.name, pilot = %name, agents = p.members.len(), "no waiting tasks for this platform: draining its agents");
            for agent in p.agent_ids() {
                m.drain_agent(agent);
            }
        }
    }
    if d.back_off {
        let reason = d
            .transitions
            .iter()
            .find(|t| t.state == PilotState::Failed)
            .map(|t| format!("pilot {} failed: {}", t.pilot, t.reason))
            .unwrap_or_default();
        fail(track, now, settings, reason, false);
    }
}

/// The spec of pilot `name` on `profile`: its `nodes_per_pilot` nodes, the profile's pilot
/// walltime, and its script, credential and work directory in `<work_dir>/<name>/`.
pub fn pilot_spec(profile: &PlatformProfile, url: &str, name: &str) -> PilotSpec {
    let dir = format!("{}/{}", profile.work_dir.trim_end_matches('/'), name);
    PilotSpec {
        name: name.to_string(),
        manager_url: url.to_string(),
        tls_fingerprint: None,
        nodes: profile.nodes_per_pilot,
        cores_per_node: profile.cores_per_node,
        walltime: profile.pilot_walltime,
        script_path: format!("{dir}/job.sh"),
        credential_path: format!("{dir}/credential"),
        work_dir: dir,
        hosts: profile
            .hosts
            .iter()
            .take(profile.nodes_per_pilot as usize)
            .cloned()
            .collect(),
        probe: false,
    }
}

/// Submits one pilot (for `user` only, on a per-user platform): a new record and
/// credential, the credential written on the platform (0600), the job script rendered and
/// submitted.
async fn submit<H: PilotHost>(
    m: &Arc<H>,
    platform: &Arc<ManagedPlatform>,
    url: &str,
    settings: &ProvisionConfig,
    track: &mut Track,
    user: Option<&str>,
) -> Result<(), String> {
    let profile = &platform.profile;
    let (record, token) = m
        .new_pilot(
            &profile.name,
            settings.credential_ttl_ms(),
            user,
            profile.nodes_per_pilot,
        )
        .await
        .map_err(|e| format!("cannot create a pilot: {e}"))?;
    let mut spec = pilot_spec(profile, url, &record.name);
    spec.tls_fingerprint = settings.manager_tls_fingerprint.clone();
    if !profile.hosts.is_empty() {
        // The hosts take turns: a pilot of N nodes gets the next N, all distinct (the
        // profile has at least `nodes_per_pilot` hosts).
        track.next_host = (track.next_host + 1) % profile.hosts.len();
        spec.hosts = (0..profile.nodes_per_pilot as usize)
            .map(|k| profile.hosts[(track.next_host + k) % profile.hosts.len()].clone())
            .collect();
    }
    let result = blocking(platform, move |p| {
        p.runner.write_file(
            &spec.credential_path,
            format!("{token}\n").as_bytes(),
            0o600,
        )?;
        let script = p.adapter.render(&p.profile, &spec)?;
        p.adapter.submit(p.runner.as_ref(), &p.profile, &script)
    })
    .await;
    match result {
        Ok(job) => {
            tracing::info!(platform = %profile.name, pilot = %record.name, job = %job, "pilot submitted");
            track.down = None;
            // A submission that works says the last failure is no longer true.
            track.last_failure.clear();
            let submitted = PilotEvent::Submitted {
                pilot: record.name.clone(),
                batch_job_id: job.0,
            };
            m.pilot_event(submitted, now_ms());
            Ok(())
        }
        Err(e) => {
            let failed = PilotEvent::SubmissionFailed {
                pilot: record.name.clone(),
                error: e.to_string(),
            };
            m.pilot_event(failed, now_ms());
            Err(format!("submission failed: {e}"))
        }
    }
}
