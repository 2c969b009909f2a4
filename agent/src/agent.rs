//! The agent's life: register, then pull, run and report until drained (SIGTERM, the
//! walltime end, or the manager's order), then deregister.

use crate::api::{Api, ApiError};
use crate::executor::{Demand, Event, Executor};
use crate::held::Held;
use crate::output_dir::Rules;
use crate::reporter;
use crate::sandbox::Sandbox;
use crate::staging::{self, Grants, Stager};
use hetpilot_protocol::protocol::{
    HeartbeatResponse, PullRequest, PullResponse, RegisterRequest, RegisterResponse, TaskAttempt,
};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::Instrument;

pub struct Options {
    pub manager: String,
    pub registration_token: String,
    pub register: RegisterRequest,
    pub prefetch: Option<u32>,
    pub work_dir: PathBuf,
    /// Drain this long before the walltime end.
    pub drain_margin: Duration,
    /// Give up registering after this long.
    pub register_timeout: Duration,
    /// Stop once the manager has not answered for this long.
    pub give_up: Duration,
    /// The node cache and the keys for tasks' files.
    pub staging: staging::Settings,
    /// The sandbox every task runs in, if any.
    pub sandbox: Option<Arc<Sandbox>>,
    /// The GPUs this agent offers, which its tasks are bound to.
    pub gpus: Arc<crate::gpu::Inventory>,
    /// Tasks' output directories and files readable by the agent's group (0750 / 0640),
    /// not its account only (0700 / 0600).
    pub group_readable_outputs: bool,
}

/// How the agent ended.
#[derive(Debug)]
pub struct Summary {
    pub tasks_run: u64,
    pub results_recorded: u64,
    pub results_refused: u64,
    /// The manager declared this agent lost (it was silent too long).
    pub lost: bool,
    /// Why the agent stopped waiting for a manager that stopped answering, if it did.
    pub abandoned: Option<String>,
    /// Results the manager never received because it stopped answering.
    pub results_unreported: u64,
}

async fn register(
    api: &Api,
    req: &RegisterRequest,
    give_up: Duration,
) -> Result<RegisterResponse, ApiError> {
    let start = tokio::time::Instant::now();
    let deadline = start.checked_add(give_up);
    let mut backoff = Duration::from_millis(100);
    loop {
        let time_left = deadline.is_none_or(|d| tokio::time::Instant::now() + backoff < d);
        match api.post("/v1/agents", req, Duration::from_secs(30)).await {
            Err(e) if e.is_transient() && time_left => {
                tracing::warn!(error = %e, "registration failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
            // Never reached at all: the manager is gone, as after `--give-up-secs`.
            Err(ApiError::Unreachable { url, message }) => {
                return Err(ApiError::Silent {
                    url,
                    silent: start.elapsed(),
                    message,
                })
            }
            other => return other,
        }
    }
}

pub async fn run(opts: Options) -> Result<Summary, ApiError> {
    let api = Api::new(
        &opts.manager,
        opts.registration_token.clone(),
        &opts.staging.trust,
        opts.give_up,
    )
    .map_err(|e| ApiError::Unreachable {
        url: opts.manager.clone(),
        message: e.to_string(),
    })?;
    let mut reg = register(&api, &opts.register, opts.register_timeout).await?;
    reg.slots = reg.slots.clamp(1, MAX_SLOTS);
    tracing::info!(agent = %reg.agent, slots = reg.slots, "registered");
    // Everything the agent logs from here on carries its id (and, at DEBUG, each run's).
    let agent_span = tracing::info_span!("agent", agent = %reg.agent);
    let api = if reg.http2 {
        // Heartbeats, long polls and reports share one connection from here on; the
        // registration's connection closes with its client.
        api.over_http2(&opts.staging.trust)
            .map_err(|e| ApiError::Unreachable {
                url: opts.manager.clone(),
                message: e.to_string(),
            })?
    } else {
        api
    }
    .with_token(reg.credential.clone());
    let base = format!("/v1/agents/{}", reg.agent);
    let output_dir = opts.work_dir.join("output");
    let runs_dir = opts.work_dir.join("runs");
    for dir in [&output_dir, &runs_dir] {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| ApiError::Unreachable {
                url: dir.display().to_string(),
                message: format!("cannot create the agent's directory: {e}"),
            })?;
    }

    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let (results_tx, results_rx) = mpsc::unbounded_channel();
    let (demand_tx, demand_rx) = watch::channel(Demand {
        want: reg.slots.saturating_add(opts.prefetch.unwrap_or(reg.slots)),
        draining: false,
        started: 0,
    });
    let started = Arc::new(Mutex::new(Vec::new()));
    let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let abandoned = Arc::new(Mutex::new(None));
    let held = Held::default();
    let grants = Grants::default();
    let stager = Stager::new(
        &opts.staging,
        &opts.manager,
        reg.credential.clone(),
        grants.clone(),
        &opts.work_dir,
    )
    .map_err(|message| ApiError::Unreachable {
        url: opts.staging.cache_dir.display().to_string(),
        message,
    })?;
    let output_rules = Rules::new(
        &runs_dir,
        &opts.staging.cache_dir,
        opts.group_readable_outputs,
    )
    .map_err(|e| ApiError::Unreachable {
        url: runs_dir.display().to_string(),
        message: format!("cannot resolve the agent's run and cache directories: {e}"),
    })?;
    let outputs = crate::sent_outputs::KeptOutputs::default();
    let executor = Executor {
        output_rules: Arc::new(output_rules),
        stager: Arc::new(stager),
        held: held.clone(),
        slots: reg.slots,
        prefetch: opts.prefetch,
        work_dir: opts.work_dir.clone(),
        output_dir,
        started: started.clone(),
        results: results_tx,
        demand: demand_tx,
        events: events_tx.clone(),
        sandbox: opts.sandbox.clone(),
        gpus: opts.gpus.clone(),
        zero_work: opts.register.zero_work,
        outputs: outputs.clone(),
        batch_job_id: opts.register.batch_job_id.clone(),
    };
    let reporter = tokio::spawn(
        reporter::run(
            api.clone(),
            format!("{base}/results"),
            held.clone(),
            demand_rx.clone(),
            results_rx,
        )
        .instrument(agent_span.clone()),
    );
    let channels = Channels {
        events: events_tx.clone(),
        held,
        lost: lost.clone(),
        abandoned: abandoned.clone(),
        started: started.clone(),
        grants,
        outputs,
    };
    let puller = tokio::spawn(
        pull_loop(api.clone(), base.clone(), demand_rx, channels.clone())
            .instrument(agent_span.clone()),
    );
    let beat = heartbeat_every(reg.heartbeat_interval_ms);
    let heart = tokio::spawn(
        heartbeat_loop(api.clone(), base.clone(), beat, channels).instrument(agent_span.clone()),
    );
    if let Err(e) = crate::stop_signal::watch() {
        tracing::error!(error = %e, "cannot watch for stop signals");
    }
    let signals = tokio::spawn(drain_on_signal_or_walltime(
        events_tx.clone(),
        opts.register.walltime_end,
        opts.drain_margin,
    ));
    drop(events_tx);

    let tasks_run = executor.run(events_rx).instrument(agent_span).await;
    puller.abort();
    signals.abort();
    let reported = reporter.await.unwrap_or_default();
    heart.abort();
    let lost = lost.load(std::sync::atomic::Ordering::SeqCst);
    let abandoned = abandoned.lock().unwrap_or_else(|p| p.into_inner()).take();
    if !lost && abandoned.is_none() {
        let r: Result<serde_json::Value, _> = api
            .post(
                &format!("{base}/deregister"),
                &serde_json::json!({}),
                Duration::from_secs(30),
            )
            .await;
        if let Err(e) = r {
            tracing::warn!(error = %e, "deregistration failed; the manager will time this agent out");
        }
    }
    Ok(Summary {
        tasks_run,
        results_recorded: reported.recorded,
        results_refused: reported.refused,
        lost,
        abandoned,
        results_unreported: reported.unreported,
    })
}

/// Most slots an agent runs, whatever the manager answers (its slot counts are summed
/// with prefetch counts and multiplied: they must stay far from overflowing).
const MAX_SLOTS: u32 = 1 << 16;

/// The heartbeat interval the manager asked for, within sane bounds: zero would make
/// `tokio::time::interval` panic, and a huge value would silence the agent.
fn heartbeat_every(ms: u64) -> Duration {
    Duration::from_millis(ms.clamp(100, 3_600_000))
}

/// A heartbeat tick every `every`, the first at once; a late beat delays the next ones.
fn beating_every(every: Duration) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

/// Shortest interval between two pulls that only report started tasks.
const STARTS_EVERY: Duration = Duration::from_millis(250);

fn is_gone(e: &ApiError) -> bool {
    matches!(e.status(), Some(404 | 410 | 401))
}

/// What the puller and the heartbeat share with the rest of the agent.
#[derive(Clone)]
struct Channels {
    events: mpsc::UnboundedSender<Event>,
    /// Runs started and not yet told to the manager.
    started: Arc<Mutex<Vec<TaskAttempt>>>,
    held: Held,
    lost: Arc<std::sync::atomic::AtomicBool>,
    /// Set when the manager stopped answering for longer than the agent waits.
    abandoned: Arc<Mutex<Option<String>>>,
    /// Grants to depots (file stores), refreshed from pull and heartbeat answers.
    grants: Grants,
    /// Finished runs' outputs, sent when the manager asks.
    outputs: crate::sent_outputs::KeptOutputs,
}

impl Channels {
    fn take_started(&self) -> Vec<TaskAttempt> {
        std::mem::take(&mut *self.started.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn untold(&self, runs: Vec<TaskAttempt>) {
        self.started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(runs);
    }

    fn lost(&self) {
        self.lost.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.events.send(Event::Drain("lost by the manager"));
    }

    /// The manager is silent for good: kill the tasks and stop (`Contact`).
    fn abandon(&self, e: &ApiError) {
        let mut why = self.abandoned.lock().unwrap_or_else(|p| p.into_inner());
        if why.is_none() {
            *why = Some(e.to_string());
            let _ = self.events.send(Event::Abandon);
        }
    }
}

async fn pull_loop(api: Api, base: String, mut demand: watch::Receiver<Demand>, ch: Channels) {
    let events = &ch.events;
    let path = format!("{base}/pull");
    let mut backoff = Duration::from_millis(50);
    let mut told_started = 0;
    let mut last_call = tokio::time::Instant::now();
    loop {
        let wake = demand
            .wait_for(|d| d.want > 0 || d.draining || d.started > told_started)
            .await;
        let Ok(mut d) = wake.map(|d| *d) else { return };
        if d.want == 0 && !d.draining {
            // Only starts to report: at most every STARTS_EVERY (they also ride on pulls
            // and heartbeats), so busy slots do not cost a call per task.
            let wanted = demand.wait_for(|d| d.want > 0 || d.draining);
            let _ = tokio::time::timeout_at(last_call + STARTS_EVERY, wanted).await;
            d = *demand.borrow();
        }
        if d.draining {
            return;
        }
        last_call = tokio::time::Instant::now();
        told_started = d.started;
        let started_now = ch.take_started();
        // With no room for tasks this pull only reports starts: it must not wait.
        let wait_ms = if d.want > 0 { 20_000 } else { 0 };
        let req = PullRequest {
            max: d.want,
            wait_ms,
            started: started_now.clone(),
        };
        match api
            .post::<_, PullResponse>(&path, &req, Duration::from_secs(60))
            .await
        {
            Ok(resp) => {
                backoff = Duration::from_millis(50);
                // Before the tasks that need them run.
                ch.grants.update(resp.grants);
                ch.held.received(
                    resp.tasks.iter().map(|t| TaskAttempt {
                        task: t.task,
                        attempt: t.attempt,
                    }),
                    resp.lease_ms,
                );
                if !resp.kill.is_empty() {
                    let _ = events.send(Event::Kill(resp.kill));
                }
                ch.outputs.send(&api, &base, resp.send_output);
                if !resp.tasks.is_empty() {
                    let (ack, acked) = oneshot::channel();
                    let _ = events.send(Event::Assign {
                        apps: resp.apps,
                        tasks: resp.tasks,
                        ack,
                    });
                    let _ = acked.await;
                }
                if resp.drain {
                    let _ = events.send(Event::Drain("the manager asked this agent to drain"));
                    return;
                }
            }
            Err(e) if is_gone(&e) => {
                tracing::error!(error = %e, "the manager no longer knows this agent; stopping");
                ch.lost();
                return;
            }
            Err(e @ ApiError::Silent { .. }) => {
                ch.abandon(&e);
                return;
            }
            Err(e) => {
                ch.untold(started_now);
                tracing::warn!(error = %e, "pull failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

async fn heartbeat_loop(api: Api, base: String, mut every: Duration, ch: Channels) {
    let events = &ch.events;
    let path = format!("{base}/heartbeat");
    let mut tick = beating_every(every);
    loop {
        tick.tick().await;
        let mut body = ch.held.heartbeat();
        body.started = ch.take_started();
        match api
            .post::<_, HeartbeatResponse>(&path, &body, every.max(Duration::from_secs(5)))
            .await
        {
            Ok(r) => {
                // The manager stretches the cadence as agents join: the next beat comes
                // one new interval after this one.
                if let Some(told) = r.heartbeat_interval_ms.map(heartbeat_every) {
                    if told != every {
                        tracing::debug!(
                            interval_ms = told.as_millis() as u64,
                            "heartbeat interval changed"
                        );
                        every = told;
                        tick = beating_every(every);
                        tick.reset();
                    }
                }
                ch.grants.update(r.grants);
                if !r.kill.is_empty() {
                    let _ = events.send(Event::Kill(r.kill));
                }
                ch.outputs.send(&api, &base, r.send_output);
                if r.drain {
                    let _ = events.send(Event::Drain("the manager asked this agent to drain"));
                }
            }
            Err(e) if is_gone(&e) => {
                ch.lost();
                return;
            }
            Err(e @ ApiError::Silent { .. }) => {
                ch.abandon(&e);
                return;
            }
            Err(e) => {
                ch.untold(body.started);
                tracing::warn!(error = %e, "heartbeat failed");
            }
        }
    }
}

async fn drain_on_signal_or_walltime(
    events: mpsc::UnboundedSender<Event>,
    walltime_end: Option<u64>,
    margin: Duration,
) {
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    let until_walltime = walltime_end.map(|end| {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Duration::from_secs(end)
            .saturating_sub(now)
            .saturating_sub(margin)
    });
    let walltime = async {
        match until_walltime {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let event = tokio::select! {
        _ = term.recv() => Event::Terminate("SIGTERM"),
        _ = int.recv() => Event::Terminate("SIGINT"),
        _ = walltime => Event::Drain("the walltime end is near"),
    };
    let _ = events.send(event);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manager_sent_intervals_are_bounded() {
        assert_eq!(heartbeat_every(0), Duration::from_millis(100));
        assert_eq!(heartbeat_every(u64::MAX), Duration::from_secs(3600));
        assert_eq!(heartbeat_every(5_000), Duration::from_secs(5));
    }
}
