//! Task outputs read through the manager, for `hetpilot logs` on another machine than the
//! agent's. Outputs stay on the node until someone asks: the owner's (or an admin's) read
//! of a run's stream that the manager does not hold records a request for the agent that
//! ran it, which the next pull or heartbeat answer carries (`send_output`); the agent sends
//! the stream (its last `limits.max_output_mib` at most) and the read is answered from
//! `DATA_DIR/outputs/app-A/task-I.N.out` (or `.err`). An agent may send only what it was
//! asked for; every stored name is made of numbers, never of what a request says. The
//! outputs of an application are removed with it.

use super::{Manager, Principal, ServiceError};
use crate::control::Wake;
use crate::queue::AgentState;
use hetpilot_protocol::protocol::TaskAttempt;
use hetpilot_protocol::task_output::{OutputStream, OutputWanted};
use hetpilot_protocol::{AgentId, AppId, TaskRef};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;

/// How long a read waits for the agent to send an output.
const WAIT_FOR_AGENT: Duration = Duration::from_secs(30);
/// Outputs asked of one agent and not yet sent, at most.
const MAX_ASKED_PER_AGENT: usize = 64;

type Wanted = (TaskAttempt, OutputStream);

/// The requests to agents in flight (in memory: a restarted manager asks again).
#[derive(Default)]
pub struct OutputRequests {
    state: Mutex<Asked>,
    /// Woken when an output arrives.
    arrived: Notify,
}

#[derive(Default)]
struct Asked {
    /// Not yet told to the agent.
    to_tell: HashMap<AgentId, HashSet<Wanted>>,
    /// Told, not yet sent: the only uploads an agent may make.
    told: HashMap<AgentId, HashSet<Wanted>>,
}

/// Where the manager keeps one run's stream: `rel` beneath `root`, and the note of how
/// many bytes were left out at its start (`skipped_rel`, present only when some were).
#[derive(Debug, Clone)]
pub struct StoredOutput {
    pub root: PathBuf,
    pub rel: PathBuf,
    pub skipped_rel: PathBuf,
}

impl StoredOutput {
    fn new(root: PathBuf, run: TaskAttempt, stream: OutputStream) -> StoredOutput {
        let dir = PathBuf::from(format!("app-{}", run.task.app));
        let name = format!(
            "task-{}.{}.{}",
            run.task.index,
            run.attempt,
            stream.as_str()
        );
        StoredOutput {
            root,
            rel: dir.join(&name),
            skipped_rel: dir.join(format!("{name}.skipped")),
        }
    }

    fn is_stored(&self) -> bool {
        hetpilot_transport::beneath::open_read(&self.root, &self.rel).is_ok()
    }

    /// The bytes left out at the start of the stream, as noted when it was stored.
    pub fn skipped(&self) -> u64 {
        hetpilot_transport::beneath::open_read(&self.root, &self.skipped_rel)
            .ok()
            .and_then(|f| std::io::read_to_string(f).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Manager {
    /// Where task outputs sent by agents are kept.
    fn outputs_root(&self) -> PathBuf {
        self.settings.data_dir.join("outputs")
    }

    /// Run `attempt` (the last if `None`) of `task`'s stream, for its owner or an admin:
    /// stored already, or asked of the agent that ran it and waited for.
    pub async fn task_output(
        &self,
        who: &Principal,
        task: TaskRef,
        attempt: Option<u32>,
        stream: OutputStream,
    ) -> Result<StoredOutput, ServiceError> {
        let (_, attempts) = self.task(who, task).await?;
        let run = match attempt {
            Some(n) => attempts
                .iter()
                .find(|a| a.attempt == n)
                .ok_or_else(|| ServiceError::NotFound(format!("task {task} has no attempt {n}")))?,
            None => attempts
                .last()
                .ok_or_else(|| ServiceError::NotFound(format!("task {task} has not run yet")))?,
        };
        let path = match stream {
            OutputStream::Stdout => &run.stdout_path,
            OutputStream::Stderr => &run.stderr_path,
        };
        let what = format!("{} of task {task} attempt {}", stream.as_str(), run.attempt);
        if run.outcome.is_none() {
            return Err(ServiceError::Conflict(format!(
                "attempt {} of task {task} has not ended; its output is sent once it has",
                run.attempt
            )));
        }
        if path.is_none() {
            return Err(ServiceError::NotFound(format!("the agent kept no {what}")));
        }
        let at = TaskAttempt {
            task,
            attempt: run.attempt,
        };
        let stored = StoredOutput::new(self.outputs_root(), at, stream);
        if stored.is_stored() {
            return Ok(stored);
        }
        let agent_here = self
            .control()
            .queues()
            .agent(run.agent)
            .is_some_and(|a| matches!(a.state, AgentState::Active | AgentState::Draining));
        if !agent_here {
            return Err(ServiceError::NotFound(format!(
                "the {what} stayed on {} and its agent {} has gone",
                run.host, run.agent
            )));
        }
        self.ask_output(run.agent, (at, stream))?;
        let deadline = tokio::time::Instant::now() + WAIT_FOR_AGENT;
        loop {
            let arrived = self.output_requests.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if stored.is_stored() {
                return Ok(stored);
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Err(ServiceError::NotFound(format!(
                    "agent {} on {} did not send the {what} within {} s (the file may be gone \
                     from the node)",
                    run.agent,
                    run.host,
                    WAIT_FOR_AGENT.as_secs()
                )));
            }
        }
    }

    /// Records that `agent` is to send `wanted`, and wakes its long poll.
    fn ask_output(&self, agent: AgentId, wanted: Wanted) -> Result<(), ServiceError> {
        {
            let mut asked = self
                .output_requests
                .state
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let told = asked.told.get(&agent).is_some_and(|s| s.contains(&wanted));
            let to_tell = asked.to_tell.entry(agent).or_default();
            if !told && !to_tell.contains(&wanted) {
                if to_tell.len() >= MAX_ASKED_PER_AGENT {
                    return Err(ServiceError::Conflict(format!(
                        "{MAX_ASKED_PER_AGENT} outputs are already asked of agent {agent}; try \
                         again once it has sent them"
                    )));
                }
                to_tell.insert(wanted);
            }
        }
        let wake = Wake {
            work: true,
            ..Wake::default()
        };
        self.waiters.deliver(wake, super::now_ms());
        Ok(())
    }

    /// The outputs to ask of `agent` in this answer (each is told once).
    pub(super) fn outputs_to_send(&self, agent: AgentId) -> Vec<OutputWanted> {
        let mut asked = self
            .output_requests
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let Some(to_tell) = asked.to_tell.remove(&agent) else {
            return Vec::new();
        };
        let max_bytes = self.settings.limits.output_bytes();
        let wanted = to_tell
            .iter()
            .map(|&(run, stream)| OutputWanted {
                run,
                stream,
                max_bytes,
            })
            .collect();
        asked.told.entry(agent).or_default().extend(to_tell);
        wanted
    }

    /// Where agent `path` stores `run`'s `stream`, which it must have been asked for (the
    /// request is then used up).
    pub fn output_upload(
        &self,
        who: &Principal,
        path: AgentId,
        run: TaskAttempt,
        stream: OutputStream,
    ) -> Result<StoredOutput, ServiceError> {
        let id = super::agents::agent(who, path)?;
        let mut asked = self
            .output_requests
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let was_told = asked
            .told
            .get_mut(&id)
            .is_some_and(|s| s.remove(&(run, stream)));
        if !was_told {
            return Err(ServiceError::Forbidden(format!(
                "the manager did not ask agent {id} for the {} of {} attempt {}",
                stream.as_str(),
                run.task,
                run.attempt
            )));
        }
        Ok(StoredOutput::new(self.outputs_root(), run, stream))
    }

    /// An output was stored: wake the reads waiting for it.
    pub fn output_arrived(&self) {
        self.output_requests.arrived.notify_waiters();
    }

    /// Removes the outputs kept for `apps` (forgotten applications).
    pub(super) async fn remove_outputs(&self, apps: Vec<AppId>) {
        let root = self.outputs_root();
        let removed = tokio::task::spawn_blocking(move || {
            for app in apps {
                let dir = root.join(format!("app-{app}"));
                match std::fs::remove_dir_all(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        tracing::warn!(error = %e, dir = %dir.display(), "cannot remove the outputs of a forgotten application")
                    }
                }
            }
        })
        .await;
        if let Err(e) = removed {
            tracing::warn!(error = %e, "removing forgotten applications' outputs stopped");
        }
    }
}
