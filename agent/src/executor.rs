//! The executor owns the node's slots: it queues the tasks the puller fetched, starts them
//! as slots free up, tracks co-runners, kills on order or timeout, and hands measured
//! results to the reporter. It publishes how many more tasks it wants (free slots plus a
//! prefetch, minus what is queued) so slots never wait on a round trip to the manager.

use crate::corunners::CoRunners;
use crate::held::Held;
use crate::runner::{self, Finished};
use hetpilot_shared::protocol::{
    AppRuntime, Assignment, Measurements, Outcome, TaskAttempt, TaskResult,
};
use hetpilot_shared::AppId;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, watch};

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
    Done(TaskAttempt, Finished),
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
    stdout: PathBuf,
    stderr: PathBuf,
    cancelled: bool,
}

pub struct Executor {
    pub slots: u32,
    pub prefetch: u32,
    pub work_dir: PathBuf,
    pub output_dir: PathBuf,
    /// Started runs not yet told to the manager (sent with the next pull).
    pub started: Arc<Mutex<Vec<TaskAttempt>>>,
    pub results: mpsc::UnboundedSender<TaskResult>,
    pub demand: watch::Sender<Demand>,
    pub events: mpsc::UnboundedSender<Event>,
    pub held: Held,
}

struct State {
    free: u32,
    apps: HashMap<AppId, AppRuntime>,
    queue: VecDeque<Assignment>,
    running: HashMap<TaskAttempt, RunningTask>,
    corunners: CoRunners,
    draining: bool,
    started: u64,
}

impl Executor {
    /// Runs until drained and idle; returns the number of tasks run.
    pub async fn run(self, mut events: mpsc::UnboundedReceiver<Event>) -> u64 {
        let mut st = State {
            free: self.slots,
            apps: HashMap::new(),
            queue: VecDeque::new(),
            running: HashMap::new(),
            corunners: CoRunners::default(),
            draining: false,
            started: 0,
        };
        let mut ran = 0u64;
        let mut assigned: Option<oneshot::Sender<()>> = None;
        self.publish(&st);
        while let Some(event) = events.recv().await {
            match event {
                Event::Assign { apps, tasks, ack } => {
                    st.apps.extend(apps.into_iter().map(|a| (a.app, a)));
                    st.queue.extend(tasks);
                    // Acknowledged once started, so the puller's next call reports the starts.
                    assigned = Some(ack);
                }
                Event::Kill(runs) => {
                    for at in runs {
                        let queued = st.queue.len();
                        st.queue
                            .retain(|a| !(a.task == at.task && a.attempt == at.attempt));
                        if st.queue.len() < queued {
                            self.held.release([at]);
                        }
                        if let Some(r) = st.running.get_mut(&at) {
                            r.cancelled = true;
                            runner::kill_group(r.pid);
                        }
                    }
                }
                Event::Drain(why) => {
                    if !st.draining {
                        tracing::info!(reason = why, running = st.running.len(), "draining");
                    }
                    st.draining = true;
                }
                Event::Done(at, finished) => {
                    ran += 1;
                    self.finish(&mut st, at, Some(finished), None);
                }
            }
            if !st.draining {
                self.start_queued(&mut st);
            }
            self.publish(&st);
            if let Some(ack) = assigned.take() {
                let _ = ack.send(());
            }
            if st.draining && st.running.is_empty() {
                break;
            }
        }
        ran
    }

    fn publish(&self, st: &State) {
        let queued: u32 = st.queue.iter().map(|a| self.cores_of(st, a)).sum();
        let want = (st.free + self.prefetch).saturating_sub(queued);
        let demand = Demand {
            want: if st.draining { 0 } else { want },
            draining: st.draining,
            started: st.started,
        };
        self.demand
            .send_if_modified(|d| std::mem::replace(d, demand) != demand);
    }

    fn cores_of(&self, st: &State, a: &Assignment) -> u32 {
        st.apps
            .get(&a.task.app)
            .map_or(1, |r| r.cores)
            .clamp(1, self.slots)
    }

    fn start_queued(&self, st: &mut State) {
        while let Some(next) = st.queue.front() {
            let cores = self.cores_of(st, next);
            if cores > st.free {
                break;
            }
            let a = st.queue.pop_front().expect("front exists");
            let at = TaskAttempt {
                task: a.task,
                attempt: a.attempt,
            };
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
            match runner::start(&a, &app, &self.work_dir, &self.output_base(&app)) {
                Err(reason) => self.finish(st, at, None, Some(reason)),
                Ok(r) => {
                    st.free -= cores;
                    st.started += 1;
                    st.corunners.start(at);
                    self.started
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(at);
                    st.running.insert(
                        at,
                        RunningTask {
                            pid: r.pid,
                            cores,
                            started_at_ms: r.started_at_ms,
                            stdout: r.stdout_path,
                            stderr: r.stderr_path,
                            cancelled: false,
                        },
                    );
                    self.watch(at, r.pid, r.started, runner::timeout_of(&app));
                }
            }
        }
    }

    fn output_base(&self, app: &AppRuntime) -> PathBuf {
        match &app.output_dir {
            Some(dir) => self.work_dir.join(dir),
            None => self.output_dir.clone(),
        }
    }

    /// Waits for the task's process on the blocking pool, killing it at its timeout.
    fn watch(
        &self,
        at: TaskAttempt,
        pid: i32,
        started: std::time::Instant,
        timeout: Option<std::time::Duration>,
    ) {
        let events = self.events.clone();
        tokio::spawn(async move {
            let timed_out = Arc::new(AtomicBool::new(false));
            let flag = timed_out.clone();
            let mut wait = tokio::task::spawn_blocking(move || {
                runner::wait_for(pid, started, || flag.load(Ordering::SeqCst))
            });
            let finished = match timeout {
                Some(limit) => match tokio::time::timeout(limit, &mut wait).await {
                    Ok(done) => done,
                    Err(_) => {
                        timed_out.store(true, Ordering::SeqCst);
                        runner::kill_group(pid);
                        wait.await
                    }
                },
                None => wait.await,
            };
            if let Ok(finished) = finished {
                let _ = events.send(Event::Done(at, finished));
            }
        });
    }

    /// Reports a run: measured (`finished`) or one that could not start (`spawn_error`).
    fn finish(
        &self,
        st: &mut State,
        at: TaskAttempt,
        finished: Option<Finished>,
        spawn_error: Option<String>,
    ) {
        let co_runners = st.corunners.end(&at);
        let running = st.running.remove(&at);
        if let Some(r) = &running {
            st.free += r.cores;
        }
        let now = runner::unix_ms();
        let result = match (finished, running) {
            (Some(f), Some(r)) => {
                let tail = runner::tail(&r.stderr)
                    .or_else(|| runner::tail(&r.stdout))
                    .unwrap_or_default();
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
                        co_runners,
                    },
                    stdout_path: Some(r.stdout.to_string_lossy().into_owned()),
                    stderr_path: Some(r.stderr.to_string_lossy().into_owned()),
                    output_tail: tail,
                    error: match (r.cancelled, f.outcome) {
                        (true, _) => Some(
                            "killed on the manager's order (cancelled or completed elsewhere)"
                                .into(),
                        ),
                        (false, Outcome::TimedOut) => Some("killed at the task's timeout".into()),
                        _ => None,
                    },
                }
            }
            _ => TaskResult {
                task: at.task,
                attempt: at.attempt,
                outcome: Outcome::SpawnError,
                exit_code: None,
                signal: None,
                measurements: Measurements {
                    started_at_ms: now,
                    ended_at_ms: now,
                    ..Default::default()
                },
                stdout_path: None,
                stderr_path: None,
                output_tail: String::new(),
                error: spawn_error.or(Some("the run ended without a status".into())),
            },
        };
        let _ = self.results.send(result);
    }
}
