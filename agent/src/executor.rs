//! The executor owns the node's slots: it queues the tasks the puller fetched, starts them
//! as slots free up, tracks co-runners, kills on order or timeout, and hands measured
//! results to the reporter. It publishes how many more tasks it wants (free slots plus a
//! prefetch, minus what is queued) so slots never wait on a round trip to the manager.

use crate::corunners::CoRunners;
use crate::held::Held;
use crate::output::{self, Captured};
use crate::output_dir::Rules;
use crate::runner::{self, Finished};
use crate::sandbox::Sandbox;
use crate::spawn::{self, Place, Prepared};
use crate::staging::{Prepared as StagedFiles, Stager};
use hetpilot_protocol::files::StagingStats;
use hetpilot_protocol::protocol::{
    AppRuntime, Assignment, Measurements, Outcome, TaskAttempt, TaskResult,
};
use hetpilot_protocol::AppId;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::Instrument;

pub enum Event {
    /// New tasks (and the runtime of applications not seen before); acknowledged once queued.
    Assign {
        apps: Vec<AppRuntime>,
        tasks: Vec<Assignment>,
        ack: oneshot::Sender<()>,
    },
    Kill(Vec<TaskAttempt>),
    /// Stop taking tasks, finish the running ones.
    Drain(&'static str),
    /// The agent was told to stop by a signal (its batch job cancelled, its node going
    /// down): drain. A run killed by a signal once the agent was (known at once, before
    /// this event: see `stop_signal`) died with the pilot, not of its own fault: it is not
    /// reported, so the manager takes it back as an attempt lost to the infrastructure (at
    /// the deregistration, or when it sees the job end).
    Terminate(&'static str),
    /// The manager is gone: stop taking tasks, kill the queued, staging and running ones.
    Abandon,
    Done(TaskAttempt, Box<Ended>),
    /// A task's files are staged (or could not be): it may start.
    Staged(Box<Staged>),
}

/// The end of staging a task's inputs; the task holds `cores` meanwhile.
pub struct Staged {
    a: Assignment,
    app: Arc<Prepared>,
    cores: u32,
    files: Result<StagedFiles, String>,
}

/// What the executor wants from the puller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demand {
    /// Slots' worth of tasks to fetch.
    pub want: u32,
    pub draining: bool,
    /// Tasks started so far (the puller tells the manager about new ones).
    pub started: u64,
}

struct RunningTask {
    pid: i32,
    cores: u32,
    started_at_ms: u64,
    cancelled: bool,
}

/// A task's process has ended and its output is drained.
pub struct Ended {
    finished: Finished,
    stdout: Captured,
    stderr: Captured,
    /// Staging figures and output problems, for tasks with files.
    staging: Option<(StagingStats, Option<String>)>,
}

/// How long output pipes may stay open after the task's process ended (a background
/// process it started may hold them); then what was read is reported.
const OUTPUT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a run killed by SIGTERM or SIGINT waits for the agent's own stop signal before
/// it is reported as killed (a batch system stopping the job signals all of its processes,
/// in whatever order).
const STOP_SIGNAL_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// A task whose output closes within this long and that has then exited is reaped
/// without a pidfd: opening, registering and closing one costs more than the rest of such
/// a task's dispatch. Later, a pidfd tells when it ends (its output may stay open: a
/// background process it started can hold it). A task that exits sooner while such a
/// process holds its output is reaped at this mark, so its wall time can be up to this
/// much too long.
const PIDFD_AFTER: std::time::Duration = std::time::Duration::from_millis(10);

pub struct Executor {
    pub slots: u32,
    /// Tasks fetched ahead; `None`: adapt to the tasks' run time (see [`prefetch`]).
    pub prefetch: Option<u32>,
    pub work_dir: PathBuf,
    /// The agent's own directory for tasks' stdout and stderr (when their application
    /// names none).
    pub output_dir: PathBuf,
    /// Where applications' output directories may be, and how their files are made.
    pub output_rules: Arc<Rules>,
    /// Started runs not yet told to the manager (sent with the next pull).
    pub started: Arc<Mutex<Vec<TaskAttempt>>>,
    pub results: mpsc::UnboundedSender<TaskResult>,
    pub demand: watch::Sender<Demand>,
    pub events: mpsc::UnboundedSender<Event>,
    pub held: Held,
    pub stager: Arc<Stager>,
    /// Each task runs in this sandbox, if set.
    pub sandbox: Option<Arc<Sandbox>>,
    /// The agent's GPUs, which each task is bound to.
    pub gpus: Arc<crate::gpu::Inventory>,
    /// Run no process: every task succeeds the moment it starts (`--zero-work`).
    pub zero_work: bool,
    /// Where finished runs' outputs are, for the manager to ask for.
    pub outputs: crate::sent_outputs::KeptOutputs,
    /// The batch job this agent runs in, for parallel runs' launchers (`{job_id}`).
    pub batch_job_id: Option<String>,
}

struct State {
    free: u32,
    /// Each application's runtime, prepared once for all its tasks.
    apps: HashMap<AppId, Arc<Prepared>>,
    /// Tasks fetched and not started, each with the cores it needs.
    queue: VecDeque<(Assignment, u32)>,
    /// Their sum, kept as the queue changes (it can hold 1024 tasks, and the demand is
    /// published after every event).
    queued_cores: u32,
    running: HashMap<TaskAttempt, RunningTask>,
    /// Tasks whose inputs are being staged; `true` once killed meanwhile.
    staging: HashMap<TaskAttempt, bool>,
    corunners: CoRunners,
    draining: bool,
    started: u64,
    /// Tasks ended without a process (`--zero-work`).
    ended_without_work: u64,
    /// Moving average of task wall time (ms), for the adaptive prefetch.
    mean_wall_ms: Option<f64>,
    /// Results of this event's runs, sent once the demand they change is published (a
    /// report tells the manager what the agent wants after them).
    outbox: Vec<TaskResult>,
}

impl Executor {
    /// Runs until drained and idle; returns the number of tasks run.
    pub async fn run(self, mut events: mpsc::UnboundedReceiver<Event>) -> u64 {
        let mut st = State {
            free: self.slots,
            apps: HashMap::new(),
            queue: VecDeque::new(),
            queued_cores: 0,
            running: HashMap::new(),
            staging: HashMap::new(),
            corunners: CoRunners::default(),
            draining: false,
            started: 0,
            ended_without_work: 0,
            // `--zero-work` runs take no time: its prefetch is the largest from the start.
            mean_wall_ms: self.zero_work.then_some(0.0),
            outbox: Vec::new(),
        };
        let mut ran = 0u64;
        let mut assigned: Option<oneshot::Sender<()>> = None;
        self.publish(&st);
        while let Some(event) = events.recv().await {
            match event {
                Event::Assign { apps, tasks, ack } => {
                    st.apps.extend(apps.into_iter().map(|a| {
                        let app = a.app;
                        (
                            app,
                            Arc::new(Prepared::new(a, &self.work_dir, &self.output_dir)),
                        )
                    }));
                    for a in tasks {
                        let cores = self.cores_of(&st, &a);
                        st.queued_cores = st.queued_cores.saturating_add(cores);
                        st.queue.push_back((a, cores));
                    }
                    // Acknowledged once started, so the puller's next call reports the starts.
                    assigned = Some(ack);
                }
                Event::Kill(runs) => {
                    for at in runs {
                        let queued = st
                            .queue
                            .iter()
                            .position(|(a, _)| a.task == at.task && a.attempt == at.attempt);
                        if let Some((_, cores)) = queued.and_then(|i| st.queue.remove(i)) {
                            st.queued_cores = st.queued_cores.saturating_sub(cores);
                            self.held.release([at]);
                        }
                        if let Some(killed) = st.staging.get_mut(&at) {
                            *killed = true;
                        }
                        if let Some(r) = st.running.get_mut(&at) {
                            r.cancelled = true;
                            runner::kill_group(r.pid);
                        }
                    }
                }
                Event::Abandon => {
                    st.draining = true;
                    let queued: Vec<TaskAttempt> = st
                        .queue
                        .drain(..)
                        .map(|(a, _)| TaskAttempt {
                            task: a.task,
                            attempt: a.attempt,
                        })
                        .collect();
                    st.queued_cores = 0;
                    self.held.release(queued);
                    st.staging.values_mut().for_each(|killed| *killed = true);
                    for r in st.running.values_mut() {
                        r.cancelled = true;
                        runner::kill_group(r.pid);
                    }
                    tracing::warn!(
                        killed = st.running.len() + st.staging.len(),
                        "the manager is gone; killing every task"
                    );
                }
                Event::Drain(why) => {
                    if !st.draining {
                        tracing::info!(reason = why, running = st.running.len(), "draining");
                    }
                    st.draining = true;
                }
                Event::Terminate(why) => {
                    tracing::info!(
                        reason = why,
                        running = st.running.len(),
                        "stopping: runs killed by a signal from now on are handed back"
                    );
                    st.draining = true;
                }
                Event::Done(at, ended) => {
                    ran += 1;
                    // EWMA with alpha = 0.2.
                    let w = ended.finished.wall_ms;
                    st.mean_wall_ms = Some(st.mean_wall_ms.map_or(w, |m| 0.8 * m + 0.2 * w));
                    self.finish(&mut st, at, Some(ended), None);
                }
                Event::Staged(staged) => self.staged(&mut st, *staged),
            }
            if !st.draining {
                self.start_queued(&mut st);
            }
            // The helper hears which tasks were reaped with the next start's request; those
            // no start carried are told now, before their results leave.
            crate::spawner::flush_reaped();
            self.publish(&st);
            for result in st.outbox.drain(..) {
                let _ = self.results.send(result);
            }
            if let Some(ack) = assigned.take() {
                let _ = ack.send(());
            }
            if st.draining && st.running.is_empty() && st.staging.is_empty() {
                break;
            }
        }
        ran + st.ended_without_work
    }

    fn publish(&self, st: &State) {
        let queued = st.queued_cores;
        let ahead = self
            .prefetch
            .unwrap_or_else(|| prefetch(self.slots, st.mean_wall_ms));
        let want = st.free.saturating_add(ahead).saturating_sub(queued);
        // Refill in batches: while tasks are queued, wait until half the prefetch is used.
        let worth_a_call = queued == 0 || want >= (ahead / 2).max(1);
        let demand = Demand {
            want: if st.draining || !worth_a_call {
                0
            } else {
                want
            },
            draining: st.draining,
            started: st.started,
        };
        self.demand
            .send_if_modified(|d| std::mem::replace(d, demand) != demand);
    }

    /// The slots a run takes: the task's own cores (a workflow task's, a moldable task's
    /// allocation), else its application's.
    fn cores_of(&self, st: &State, a: &Assignment) -> u32 {
        a.cores
            .or_else(|| st.apps.get(&a.task.app).map(|p| p.runtime.cores))
            .unwrap_or(1)
            .clamp(1, self.slots)
    }

    fn start_queued(&self, st: &mut State) {
        while let Some(&(_, cores)) = st.queue.front() {
            if cores > st.free {
                break;
            }
            let (a, _) = st.queue.pop_front().expect("front exists");
            st.queued_cores = st.queued_cores.saturating_sub(cores);
            let at = TaskAttempt {
                task: a.task,
                attempt: a.attempt,
            };
            if self.zero_work {
                self.end_without_work(st, at);
                continue;
            }
            let Some(app) = st.apps.get(&a.task.app).cloned() else {
                self.finish(
                    st,
                    at,
                    None,
                    Some(format!(
                        "no runtime description for application {}",
                        a.task.app
                    )),
                );
                continue;
            };
            // Its output directory is checked and made (or refused) before anything is
            // staged or run.
            if let Err(reason) = app.output_dir(&self.output_rules) {
                self.finish(st, at, None, Some(reason));
                continue;
            }
            // Staging hook: a task with files starts once its inputs are in place.
            if app.runtime.files.is_some() || a.files.is_some() {
                st.free -= cores;
                st.staging.insert(at, false);
                self.stage(a, app, cores);
                continue;
            }
            self.launch(st, a, app, cores, None);
        }
    }

    /// `--zero-work`: the task succeeds now, with no process, staging or output.
    fn end_without_work(&self, st: &mut State, at: TaskAttempt) {
        st.ended_without_work += 1;
        // Nothing to wait for: the prefetch grows to its largest batches.
        st.mean_wall_ms = Some(0.0);
        let now = runner::unix_ms();
        st.outbox.push(TaskResult::without_output(
            at,
            Outcome::Success,
            Measurements {
                started_at_ms: now,
                ended_at_ms: now,
                ..Default::default()
            },
            None,
        ));
    }

    /// Stages a task's inputs off the event loop; ends with [`Event::Staged`].
    fn stage(&self, a: Assignment, app: Arc<Prepared>, cores: u32) {
        let (stager, events) = (self.stager.clone(), self.events.clone());
        tokio::spawn(async move {
            let files = stager.prepare(&a, &app.runtime).await;
            let staged = Staged {
                a,
                app,
                cores,
                files,
            };
            let _ = events.send(Event::Staged(Box::new(staged)));
        });
    }

    fn staged(&self, st: &mut State, s: Staged) {
        let at = TaskAttempt {
            task: s.a.task,
            attempt: s.a.attempt,
        };
        let killed = st.staging.remove(&at).unwrap_or(false);
        st.free += s.cores;
        match s.files {
            Err(reason) => self.finish(st, at, None, Some(reason)),
            Ok(_) if killed => self.finish(
                st,
                at,
                None,
                Some("killed on the manager's order before it started".into()),
            ),
            Ok(files) => self.launch(st, s.a, s.app, s.cores, Some(files)),
        }
    }

    /// Starts a task's process (in its run directory when it has files, which then
    /// replaces the application's working directory).
    fn launch(
        &self,
        st: &mut State,
        a: Assignment,
        app: Arc<Prepared>,
        cores: u32,
        files: Option<StagedFiles>,
    ) {
        let at = TaskAttempt {
            task: a.task,
            attempt: a.attempt,
        };
        // A sandboxed task without files still runs in a run directory of its own: the only
        // place it may write.
        // So does a parallel run, for its host file.
        let parallel = !a.hosts.is_empty();
        let scratch = match (&self.sandbox, &files) {
            (Some(_), None) => match self.scratch_dir(&a, &app) {
                Ok(dir) => Some(dir),
                Err(reason) => return self.finish(st, at, None, Some(reason)),
            },
            (None, None) if parallel => {
                match crate::work_dir::fresh_run_dir(&self.work_dir.join("runs"), &a) {
                    Ok(dir) => Some(dir),
                    Err(reason) => return self.finish(st, at, None, Some(reason)),
                }
            }
            _ => None,
        };
        let run_dir = files.as_ref().map(|f| f.dir.clone()).or(scratch.clone());
        let nodefile = match run_dir.as_deref().filter(|_| parallel) {
            Some(dir) => match crate::nodefile::write(dir, &a.hosts) {
                Ok(path) => Some(path),
                Err(reason) => return self.finish(st, at, None, Some(reason)),
            },
            None => None,
        };
        // A parallel run made a run directory only for its host file keeps the
        // application's working directory, if it names one.
        let cwd_dir = match (&files, &self.sandbox) {
            (None, None) if app.runtime.workdir.is_some() => None,
            _ => run_dir.as_deref(),
        };
        {
            let started_at_ms = runner::unix_ms();
            let started = Instant::now();
            let place = Place {
                run_dir: cwd_dir,
                nodefile: nodefile.as_deref(),
                job_id: self.batch_job_id.as_deref(),
                sandbox: self.sandbox.as_deref(),
                gpus: Some(&self.gpus),
                read_only: files.as_ref().map_or(&[][..], |f| &f.read_only),
            };
            match spawn::start(&a, &app, place) {
                Err(reason) => {
                    if let Some(dir) = &scratch {
                        let _ = std::fs::remove_dir_all(dir);
                    }
                    self.finish(st, at, None, Some(reason))
                }
                Ok(child) => {
                    st.free -= cores;
                    st.started += 1;
                    st.corunners.start(at, &a.resources);
                    self.started
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(at);
                    st.running.insert(
                        at,
                        RunningTask {
                            pid: child.pid,
                            cores,
                            started_at_ms,
                            cancelled: false,
                        },
                    );
                    self.watch(a, child, started, app, (files, scratch));
                }
            }
        }
    }

    /// The run directory of a sandboxed task that has no files (emptied if it exists).
    fn scratch_dir(&self, a: &Assignment, app: &Prepared) -> Result<PathBuf, String> {
        if app.runtime.workdir.is_some() {
            return Err(
                "this agent runs tasks in a sandbox, where a task works in a run \
                 directory of its own: the application's `workdir` cannot be used (declare \
                 its input and output files instead)"
                    .into(),
            );
        }
        crate::work_dir::fresh_run_dir(&self.work_dir.join("runs"), a)
    }

    /// Drains the task's output and waits for its process, all in one tokio task (no
    /// thread per task), killing it at its timeout. `run` holds the task's staged files or
    /// the scratch run directory of a sandboxed task; both are cleaned up after it.
    fn watch(
        &self,
        a: Assignment,
        child: spawn::Child,
        started: Instant,
        app: Arc<Prepared>,
        run: (Option<StagedFiles>, Option<PathBuf>),
    ) {
        let (files, scratch) = run;
        let events = self.events.clone();
        let rules = self.output_rules.clone();
        let span = run_span(&a);
        tokio::spawn(async move {
            let (mut stdout, mut stderr) = (Captured::default(), Captured::default());
            let finished = {
                let create = |ext: &str| {
                    let name = format!("task-{}.{}.{ext}", a.task.index, a.attempt);
                    let (app, rules) = (&app, &rules);
                    move || app.output_dir(rules).and_then(|dir| dir.create(&name))
                };
                let out = output::capture(child.stdout, create("out"), &mut stdout);
                let err = output::capture(child.stderr, create("err"), &mut stderr);
                let drain = async { tokio::join!(out, err) };
                tokio::pin!(drain);
                let mut drained = false;
                // Short tasks are reaped when their output closes, without a pidfd.
                let early = tokio::select! {
                    _ = &mut drain => {
                        drained = true;
                        runner::try_reap(child.pid, started)
                    }
                    _ = tokio::time::sleep(PIDFD_AFTER) => None,
                };
                match early {
                    Some(finished) => finished,
                    None => {
                        let timeout = runner::timeout_of(&app.runtime);
                        let exit = runner::wait_exit(child.pid, started, timeout);
                        tokio::pin!(exit);
                        let finished = loop {
                            tokio::select! {
                                f = &mut exit => break f,
                                _ = &mut drain, if !drained => drained = true,
                            }
                        };
                        if !drained {
                            // Something the task started may hold the pipes: keep what
                            // came in time.
                            let _ = tokio::time::timeout(OUTPUT_GRACE, drain).await;
                        }
                        finished
                    }
                }
            };
            // A run killed by a stop signal before the agent got its own (a batch system
            // signalling the job's processes one by one): the agent's may follow at once,
            // and the run then went down with the pilot (see `finish`).
            if crate::stop_signal::is_stop_signal(finished.signal) {
                crate::stop_signal::arrives_within(STOP_SIGNAL_WAIT).await;
            }
            // Staging hook: store the outputs back, release the cached inputs.
            let staging = match files {
                Some(f) => Some(f.finish(finished.outcome == Outcome::Success).await),
                None => None,
            };
            if let Some(dir) = scratch {
                if let Err(e) = tokio::fs::remove_dir_all(&dir).await {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot remove a run directory");
                }
            }
            tracing::debug!(outcome = ?finished.outcome, exit_code = finished.exit_code,
                wall_ms = finished.wall_ms, "ended");
            let at = TaskAttempt {
                task: a.task,
                attempt: a.attempt,
            };
            let _ = events.send(Event::Done(
                at,
                Box::new(Ended {
                    finished,
                    stdout,
                    stderr,
                    staging,
                }),
            ));
        }.instrument(span));
    }

    /// Reports a run: measured (`ended`) or one that could not start (`spawn_error`).
    fn finish(
        &self,
        st: &mut State,
        at: TaskAttempt,
        ended: Option<Box<Ended>>,
        spawn_error: Option<String>,
    ) {
        let co_runners = st.corunners.end(&at);
        let running = st.running.remove(&at);
        if let Some(r) = &running {
            st.free += r.cores;
        }
        let now = runner::unix_ms();
        // A batch system stopping the job signals the agent no later than its tasks, so
        // the agent's own signal is already delivered or pending (see `stop_signal`).
        let killed_with_pilot = crate::stop_signal::received()
            && running.as_ref().is_some_and(|r| !r.cancelled)
            && ended
                .as_ref()
                .is_some_and(|e| e.finished.outcome == Outcome::Signaled);
        if killed_with_pilot {
            tracing::warn!(task = %at.task, attempt = at.attempt, "the run was killed with this agent; handing it back unreported");
            return;
        }
        let result = match (ended, running) {
            (Some(e), Some(r)) => {
                let Ended {
                    finished: mut f,
                    stdout,
                    stderr,
                    staging,
                } = *e;
                let (staging, staging_error) = staging.map_or((None, None), |(s, e)| (Some(s), e));
                // Output lost to a full disk fails the run: its product is gone.
                let no_room = stdout.no_room || stderr.no_room;
                if (staging_error.is_some() || no_room) && f.outcome == Outcome::Success {
                    f.outcome = Outcome::Failed;
                }
                // Tails explain failures; successful runs keep their output in the files.
                let tail = match (f.outcome, stderr.tail.is_empty()) {
                    (Outcome::Success, _) => String::new(),
                    (_, false) => String::from_utf8_lossy(&stderr.tail).into_owned(),
                    (_, true) => String::from_utf8_lossy(&stdout.tail).into_owned(),
                };
                let problems: Vec<String> = [
                    r.cancelled.then(|| {
                        "killed on the manager's order (cancelled or completed elsewhere)"
                            .to_string()
                    }),
                    (f.outcome == Outcome::TimedOut)
                        .then(|| "killed at the task's timeout".to_string()),
                    self.output_problem(&stdout, "stdout"),
                    self.output_problem(&stderr, "stderr"),
                    staging_error,
                ]
                .into_iter()
                .flatten()
                .collect();
                self.outputs
                    .record(at, stdout.path.clone(), stderr.path.clone());
                let path = |c: Option<PathBuf>| c.map(|p| p.to_string_lossy().into_owned());
                TaskResult {
                    task: at.task,
                    attempt: at.attempt,
                    outcome: f.outcome,
                    exit_code: f.exit_code,
                    signal: f.signal,
                    measurements: Measurements {
                        started_at_ms: r.started_at_ms,
                        ended_at_ms: f.ended_at_ms,
                        wall_ms: f.wall_ms,
                        user_cpu_ms: f.user_cpu_ms,
                        sys_cpu_ms: f.sys_cpu_ms,
                        max_rss_kb: f.max_rss_kb,
                        co_runners: co_runners.node,
                        device_co_runners: co_runners.device,
                    },
                    stdout_path: path(stdout.path),
                    stderr_path: path(stderr.path),
                    output_tail: tail,
                    error: (!problems.is_empty()).then(|| problems.join("; ")),
                    staging,
                }
            }
            _ => TaskResult::without_output(
                at,
                Outcome::SpawnError,
                Measurements {
                    started_at_ms: now,
                    ended_at_ms: now,
                    ..Default::default()
                },
                spawn_error.or(Some("the run ended without a status".into())),
            ),
        };
        st.outbox.push(result);
    }
}

impl Executor {
    /// Why part of a stream's output was not kept: a full disk in words that name the
    /// directory and what to do (see `disk_full`).
    fn output_problem(&self, c: &Captured, stream: &str) -> Option<String> {
        let error = c.error.as_ref()?;
        match (&c.path, c.no_room) {
            (Some(path), true) => Some(crate::disk_full::reason(
                &self.work_dir,
                path,
                &format!(
                    "the task's {stream} ({} bytes) was not kept whole ({error})",
                    c.bytes
                ),
            )),
            _ => Some(error.clone()),
        }
    }
}

/// Slot time (ms) of short tasks to keep fetched ahead per slot: enough that pulls, each
/// a transaction on the manager (about 1 ms of its CPU), are shared by hundreds of
/// sub-millisecond tasks, and little enough that no more than a quarter of a second of
/// work per slot is kept from other agents.
const AHEAD_MS_PER_SLOT: f64 = 250.0;

/// How many tasks to fetch ahead: none before any run has ended (a task that may run
/// for hours is not held back from another agent's free slot on a guess), a slot's worth
/// while tasks are long, more while they are so short that a round trip to the manager
/// would idle the slots: [`AHEAD_MS_PER_SLOT`] of work per slot, at least 4 tasks per
/// slot and 64 in all (each pull costs the manager a transaction), at most 1024.
pub fn prefetch(slots: u32, mean_wall_ms: Option<f64>) -> u32 {
    match mean_wall_ms {
        None => 0,
        Some(ms) if ms < 100.0 => {
            // Saturating float-to-int cast: a zero mean gives u32::MAX, then the clamp.
            let by_work = (f64::from(slots) * AHEAD_MS_PER_SLOT / ms) as u32;
            by_work.max(slots.saturating_mul(4)).clamp(64, 1024)
        }
        Some(_) => slots,
    }
}

/// The span a run's output and wait are followed in: `run` with the application, task and
/// attempt at DEBUG (under the agent's span); at coarser levels, just the agent's span, so
/// a run costs no span of its own.
fn run_span(a: &Assignment) -> tracing::Span {
    let span = tracing::debug_span!("run", app = %a.task.app, task = %a.task, attempt = a.attempt);
    if span.is_disabled() {
        tracing::Span::current()
    } else {
        span
    }
}

#[cfg(test)]
mod tests {
    use super::prefetch;

    #[test]
    fn prefetch_grows_only_for_short_tasks() {
        assert_eq!(prefetch(4, None), 0, "nothing held on a guess");
        assert_eq!(prefetch(4, Some(5_000.0)), 4);
        assert_eq!(prefetch(4, Some(100.0)), 4);
        assert_eq!(prefetch(2, Some(30.0)), 64);
        assert_eq!(prefetch(64, Some(30.0)), 533);
    }

    #[test]
    fn prefetch_holds_a_quarter_second_of_sub_millisecond_work_per_slot() {
        assert_eq!(prefetch(2, Some(1.0)), 500);
        assert_eq!(prefetch(2, Some(0.5)), 1000);
        assert_eq!(prefetch(16, Some(1.0)), 1024);
        assert_eq!(prefetch(2, Some(0.0)), 1024);
        // Shrinks again as the tasks get longer.
        assert_eq!(prefetch(2, Some(5.0)), 100);
        assert_eq!(prefetch(2, Some(20.0)), 64);
    }

    #[test]
    fn prefetch_cannot_overflow() {
        assert_eq!(prefetch(u32::MAX, Some(1.0)), 1024);
        assert_eq!(prefetch(u32::MAX, Some(1000.0)), u32::MAX);
    }
}
