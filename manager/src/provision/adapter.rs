//! The batch-system adapter trait: render a pilot's job script, submit it, poll many jobs
//! in one call, cancel. One small module per batch system implements it.

use super::profile::{AdapterKind, PlatformProfile};
use super::runner::{CommandRunner, RunnerError};
use std::collections::HashMap;
use std::time::Duration;

/// A job id as the batch system prints it, without any `.server` suffix. For the ssh and
/// local adapters it is `host:pid`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BatchJobId(pub String);

impl std::fmt::Display for BatchJobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the provisioner asks for: one pilot on one platform.
#[derive(Debug, Clone, PartialEq)]
pub struct PilotSpec {
    /// The pilot's name, unique on the manager (`[A-Za-z0-9._-]`), e.g. `darth-p17`. Used
    /// as the job name and in file names.
    pub name: String,
    /// URL the agent reaches the manager at.
    pub manager_url: String,
    /// Nodes and cores per node the pilot asks for.
    pub nodes: u32,
    pub cores_per_node: u32,
    pub walltime: Duration,
    /// Where on the platform the job script is written (mode 0700).
    pub script_path: String,
    /// Where on the platform the pilot's credential was written (mode 0600). The script
    /// hands this path to the agent in `HETPILOT_AGENT_TOKEN_FILE`; the credential itself
    /// is never in the script or on a command line.
    pub credential_path: String,
    /// Directory for the pilot's batch output and the agent's work directory.
    pub work_dir: String,
    /// The ssh adapter's target host (one of the profile's `hosts`); `None` for the others.
    pub host: Option<String>,
}

/// A rendered job script and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobScript {
    pub path: String,
    pub text: String,
}

/// A batch job's state as the provisioner needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Waiting in the batch queue (Slurm PENDING, PBS Q/W, LoadLeveler I/NQ/...).
    Queued,
    /// Held by a user or the system (Slurm JobHeld*, PBS H, LoadLeveler H/S).
    Held,
    Running,
    /// Finished or finishing; `exit_code` when the batch system reports it.
    Ended {
        exit_code: Option<i32>,
        reason: String,
    },
    /// The batch system no longer knows the job (e.g. `qstat` exit 153).
    Vanished,
}

#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// A command ran and failed; `output` is what it printed.
    #[error("`{command}` failed (exit {status}): {output}")]
    Command {
        command: String,
        status: i32,
        output: String,
    },
    /// A command printed something we could not understand.
    #[error("cannot parse the output of `{command}`: {problem}")]
    Parse { command: String, problem: String },
    /// The pilot cannot be expressed for this platform (e.g. more nodes than it has).
    #[error("cannot render the job script: {0}")]
    Render(String),
}

/// One batch system. Implementations hold no connection: commands go through the
/// [`CommandRunner`] passed in, locally or over SSH.
pub trait BatchAdapter: Send + Sync {
    fn kind(&self) -> AdapterKind;

    /// The job script for `pilot` on `profile`. Pure: no I/O.
    fn render(
        &self,
        profile: &PlatformProfile,
        pilot: &PilotSpec,
    ) -> Result<JobScript, AdapterError>;

    /// Writes the script (mode 0700) and submits it; returns the batch job id.
    fn submit(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        script: &JobScript,
    ) -> Result<BatchJobId, AdapterError>;

    /// The states of `jobs`, in as few commands as the batch system allows (one `squeue`
    /// or `qstat` per call, not one per job). Every requested id is in the answer.
    fn poll(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        jobs: &[BatchJobId],
    ) -> Result<HashMap<BatchJobId, JobState>, AdapterError>;

    /// Cancels a job; cancelling a job that already ended is not an error.
    fn cancel(
        &self,
        runner: &dyn CommandRunner,
        profile: &PlatformProfile,
        job: &BatchJobId,
    ) -> Result<(), AdapterError>;
}
