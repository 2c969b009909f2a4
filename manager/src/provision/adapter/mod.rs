//! The batch-system adapter trait: render a pilot's job script, submit it, poll many jobs
//! in one call, cancel. One small module per batch system implements it; [`adapter_for`]
//! picks one.

mod gpu_check;
mod llq;
mod loadleveler;
mod node_launch;
mod pbs;
mod process;
mod qstat;
pub mod queue_check;
mod resources;
pub mod script;
mod slurm;

pub use loadleveler::LoadLeveler;
pub use pbs::{Pbs, PbsFlavour};
pub use process::Process;
pub use slurm::Slurm;

use super::profile::{AdapterKind, PlatformProfile};
use super::runner::{CommandOutput, CommandRunner, RunnerError};
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
    /// The manager's HTTPS certificate fingerprint the agent pins, if it has one.
    pub tls_fingerprint: Option<String>,
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
    /// The ssh adapter's target hosts (distinct ones of the profile's `hosts`, one per
    /// node of the pilot); empty for the others.
    pub hosts: Vec<String>,
    /// A `platforms check --probe` job: its script runs `AGENT --version` instead of the
    /// agent (no credential, no registration).
    pub probe: bool,
}

/// A rendered job script and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobScript {
    pub path: String,
    pub text: String,
    /// Where the job's stdout and stderr go (`<work_dir>/<pilot>.out`, `.err`).
    pub stdout_path: String,
    pub stderr_path: String,
    /// The ssh adapter's target hosts (copied from [`PilotSpec::hosts`]).
    pub hosts: Vec<String>,
}

/// A batch job's state as the provisioner needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Waiting in the batch queue (Slurm PENDING, PBS Q/W, LoadLeveler I/NQ/...).
    Queued,
    /// Held by a user or the system (Slurm JobHeld*, PBS H, LoadLeveler H/S).
    Held,
    Running,
    /// Still finishing (Slurm COMPLETING: the kill wait, the epilog): its processes are
    /// going or gone, and the final state and exit status are still to come.
    Ending {
        reason: String,
    },
    /// Finished; `exit_code` when the batch system reports it.
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

    /// Runs `argv` where pilot `job`'s files are: the login side, or the ssh adapter's
    /// target host (the login side for a pilot never submitted, `None`).
    fn run_beside(
        &self,
        runner: &dyn CommandRunner,
        _profile: &PlatformProfile,
        _job: Option<&BatchJobId>,
        argv: &[&str],
    ) -> Result<CommandOutput, AdapterError> {
        Ok(runner.run(argv, None)?)
    }

    /// What the batch system says about `profile`'s partition, queue or class and account
    /// for pilots shaped like `pilot` (see [`queue_check`]); nothing to ask without a
    /// batch system.
    fn check_queue(
        &self,
        _runner: &dyn CommandRunner,
        _profile: &PlatformProfile,
        _pilot: &PilotSpec,
    ) -> Vec<queue_check::Finding> {
        Vec::new()
    }
}

/// The adapter for a batch system. The ssh adapter keeps one SSH session per target host
/// for as long as it lives.
pub fn adapter_for(kind: AdapterKind) -> Box<dyn BatchAdapter> {
    match kind {
        AdapterKind::Slurm => Box::new(Slurm),
        AdapterKind::Pbs => Box::new(Pbs(PbsFlavour::Pro)),
        AdapterKind::Torque => Box::new(Pbs(PbsFlavour::Torque)),
        AdapterKind::LoadLeveler => Box::new(LoadLeveler),
        AdapterKind::Ssh => Box::new(Process::ssh()),
        AdapterKind::Local => Box::new(Process::local()),
    }
}

/// Runs `argv` and fails with [`AdapterError::Command`] unless it exits 0.
fn run_ok(
    runner: &dyn CommandRunner,
    argv: &[&str],
    stdin: Option<&[u8]>,
) -> Result<CommandOutput, AdapterError> {
    let out = runner.run(argv, stdin)?;
    if out.status != 0 {
        return Err(command_failed(argv, &out));
    }
    Ok(out)
}

/// A raw wait status (`exit << 8 | signal`) as a shell-style exit code: the exit status,
/// or 128 + the signal that killed the job.
fn wait_status_code(raw: i32) -> i32 {
    if raw & 0x7f != 0 {
        128 + (raw & 0x7f)
    } else {
        raw >> 8
    }
}

/// What a failed command printed, on one line (its lines joined with " / "), so that a
/// reason built from it fits a log line and a table cell.
fn one_line(stdout: &str, stderr: &str) -> String {
    stdout
        .lines()
        .chain(stderr.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" / ")
}

fn command_failed(argv: &[&str], out: &CommandOutput) -> AdapterError {
    AdapterError::Command {
        command: shell_words::join(argv),
        status: out.status,
        output: one_line(&out.stdout, &out.stderr),
    }
}

/// Runs the words after it with umask 077: the batch system creates the job's own output
/// files (`#SBATCH --output`, `-o`/`-e`) with the umask of the submission (Slurm passes it
/// on as `SLURM_UMASK`), so they are private to the site user like the pilot directory.
const SUBMIT_PRIVATELY: [&str; 4] = ["sh", "-c", "umask 077 && exec \"$@\"", "hetpilot-submit"];

/// Writes the job script with mode 0700 and runs `submit` (the submit command's argv,
/// ending with the script path) under umask 077; returns what it printed on stdout.
fn write_and_submit(
    runner: &dyn CommandRunner,
    script: &JobScript,
    submit: &[&str],
) -> Result<String, AdapterError> {
    runner.write_file(&script.path, script.text.as_bytes(), 0o700)?;
    let argv: Vec<&str> = SUBMIT_PRIVATELY.iter().chain(submit).copied().collect();
    let out = runner.run(&argv, None)?;
    if out.status != 0 {
        return Err(command_failed(submit, &out));
    }
    tracing::info!(script = %script.path, place = %runner.place(), command = submit[0], "submitted");
    Ok(out.stdout)
}

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    use super::*;

    /// The submission wrapper really runs the submit command under umask 077, with its
    /// words untouched, and a failure names the submit command, not the wrapper.
    #[test]
    fn batch_submissions_run_under_umask_077() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job 1; rm -rf x.sh").display().to_string();
        let script = JobScript {
            path: path.clone(),
            text: "#!/bin/sh\n".into(),
            stdout_path: String::new(),
            stderr_path: String::new(),
            hosts: Vec::new(),
        };
        let runner = crate::provision::runner::LocalRunner;
        let printed =
            write_and_submit(&runner, &script, &["sh", "-c", "umask; echo \"$0\"", &path]).unwrap();
        assert_eq!(printed, format!("0077\n{path}\n"));
        let err = write_and_submit(&runner, &script, &["false", &path]).unwrap_err();
        assert!(err.to_string().starts_with("`false "), "{err}");
    }

    #[test]
    fn a_failed_commands_output_is_one_line() {
        let out = CommandOutput {
            status: 1,
            stdout: String::new(),
            stderr:
                "sbatch: error: invalid partition specified: smal\n\
                     sbatch: error: Batch job submission failed: Invalid partition name specified\n"
                    .into(),
        };
        let err = command_failed(&["sbatch", "--parsable", "/p/job.sh"], &out).to_string();
        assert_eq!(
            err,
            "`sbatch --parsable /p/job.sh` failed (exit 1): sbatch: error: invalid partition \
             specified: smal / sbatch: error: Batch job submission failed: Invalid partition \
             name specified"
        );
    }
}
