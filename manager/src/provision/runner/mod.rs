//! Where batch commands run: on this machine ([`LocalRunner`]), or on a login host over one
//! reused SSH session ([`SshRunner`]). Commands are argument vectors, never shell strings
//! built from user input.

mod local;
mod ssh;
mod ssh_connect;

pub use local::LocalRunner;
pub use ssh::SshRunner;
pub use ssh_connect::look_up_host_key;

use super::profile::Login;
use hetpilot_transport::host_keys::HostKeyError;
use std::path::PathBuf;
use std::sync::Arc;
/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// Exit status; -1 if it was killed by a signal.
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The command could not be started (e.g. not installed on the login host).
    #[error("cannot run `{command}` on {place}: {problem}")]
    Spawn {
        command: String,
        place: String,
        problem: String,
    },
    /// The login host cannot be reached or refused us.
    #[error("cannot reach login host {host}: {problem}")]
    Unreachable { host: String, problem: String },
    #[error("cannot write {path} on {place}: {problem}")]
    Write {
        path: String,
        place: String,
        problem: String,
    },
    #[error("key file {path}: {problem}")]
    Key { path: PathBuf, problem: String },
    /// The host's key is not in known_hosts, or differs from the one listed there.
    #[error("SSH host key refused: {0}")]
    HostKey(#[from] HostKeyError),
}

/// Runs commands and writes files on a platform's login side.
pub trait CommandRunner: Send + Sync {
    /// Runs `argv` (no shell on the local side; each word quoted over SSH), feeding `stdin`.
    fn run(&self, argv: &[&str], stdin: Option<&[u8]>) -> Result<CommandOutput, RunnerError>;

    /// Creates or replaces `path` with `contents` and permission bits `mode`, creating
    /// missing parent directories (mode 0700).
    fn write_file(&self, path: &str, contents: &[u8], mode: u32) -> Result<(), RunnerError>;

    /// Where commands run, for messages: `local` or `user@host:port`.
    fn place(&self) -> String;
}

/// The runner for a platform's login: [`LocalRunner`] or an [`SshRunner`] (which connects
/// on first use).
pub fn for_login(login: &Login) -> Result<Arc<dyn CommandRunner>, RunnerError> {
    Ok(match login {
        Login::Local => Arc::new(LocalRunner),
        Login::Ssh {
            user,
            host,
            port,
            key_file,
            host_keys,
        } => Arc::new(SshRunner::new(user, host, *port, key_file, host_keys)?),
    })
}
