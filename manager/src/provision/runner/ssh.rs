//! [`SshRunner`]: runs batch commands on a login host over one SSH session (ssh2 crate),
//! opened on first use, reused by every later call, and reopened once when it broke.
//! Files go over SFTP with the requested permission bits. The host key is checked before
//! logging in (see [`super::ssh_connect`]): an unknown host or a changed key is refused
//! unless the profile's `host_key_policy` lets a new host's key in.

use super::ssh_connect::open_verified;
use super::{CommandOutput, CommandRunner, RunnerError};
use hetpilot_transport::host_keys::HostKeyCheck;
use ssh2::{FileStat, OpenFlags, OpenType, Session};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// How long one blocking SSH operation (e.g. waiting for a command's output) may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs commands as `user` on `host:port`, authenticating with a private key file.
pub struct SshRunner {
    user: String,
    host: String,
    port: u16,
    key_file: PathBuf,
    host_keys: HostKeyCheck,
    session: Mutex<Option<Session>>,
}

/// Where an SSH operation failed: before the command was sent (safe to retry on a fresh
/// session) or after (it may have run: never repeated).
enum Failure {
    BeforeSend(RunnerError),
    AfterSend(RunnerError),
}

impl SshRunner {
    /// A runner for `user@host:port` checking the host's key with `host_keys`; connects on
    /// first use. Fails at once if the key file cannot be read.
    pub fn new(
        user: &str,
        host: &str,
        port: u16,
        key_file: &Path,
        host_keys: &HostKeyCheck,
    ) -> Result<Self, RunnerError> {
        std::fs::File::open(key_file).map_err(|e| RunnerError::Key {
            path: key_file.to_path_buf(),
            problem: format!("cannot read the private key: {e}"),
        })?;
        Ok(SshRunner {
            user: user.into(),
            host: host.into(),
            port,
            key_file: key_file.to_path_buf(),
            host_keys: host_keys.clone(),
            session: Mutex::new(None),
        })
    }

    fn unreachable(&self, problem: String) -> RunnerError {
        RunnerError::Unreachable {
            host: format!("{}:{}", self.host, self.port),
            problem,
        }
    }

    fn connect(&self) -> Result<Session, RunnerError> {
        let session = open_verified(&self.host, self.port, &self.host_keys)?;
        session
            .userauth_pubkey_file(&self.user, None, &self.key_file, None)
            .map_err(|e| {
                self.unreachable(format!(
                    "public-key login as {:?} with {} refused: {e} (is the public key in the \
                     user's authorized_keys?)",
                    self.user,
                    self.key_file.display()
                ))
            })?;
        session.set_timeout(COMMAND_TIMEOUT.as_millis() as u32);
        tracing::info!(place = %self.place(), "ssh session opened");
        Ok(session)
    }

    /// Runs `op` on the session, opening it if needed; if `op` fails before anything was
    /// sent (a broken session), opens a fresh session and tries once more.
    fn with_session<T>(
        &self,
        op: impl Fn(&Session) -> Result<T, Failure>,
    ) -> Result<T, RunnerError> {
        let mut guard = self.session.lock().unwrap_or_else(|e| e.into_inner());
        for attempt in 0..2 {
            if guard.is_none() {
                *guard = Some(self.connect()?);
            }
            let session = guard.as_ref().expect("connected above");
            match op(session) {
                Ok(v) => return Ok(v),
                Err(Failure::BeforeSend(e)) if attempt == 0 => {
                    tracing::warn!(place = %self.place(), error = %e, "ssh session broken; reconnecting");
                    *guard = None;
                }
                Err(Failure::BeforeSend(e)) | Err(Failure::AfterSend(e)) => {
                    *guard = None;
                    return Err(e);
                }
            }
        }
        unreachable!("the second attempt always returns")
    }
}

impl CommandRunner for SshRunner {
    fn run(&self, argv: &[&str], stdin: Option<&[u8]>) -> Result<CommandOutput, RunnerError> {
        let command = shell_words::join(argv);
        let failed = |problem: String| RunnerError::Spawn {
            command: command.clone(),
            place: self.place(),
            problem,
        };
        let out = self.with_session(|session| {
            let mut channel = session
                .channel_session()
                .map_err(|e| Failure::BeforeSend(failed(format!("opening a channel: {e}"))))?;
            channel
                .exec(&command)
                .map_err(|e| Failure::BeforeSend(failed(format!("exec: {e}"))))?;
            let after = |what: &str, e: &dyn std::fmt::Display| {
                Failure::AfterSend(failed(format!("{what}: {e}")))
            };
            if let Some(data) = stdin {
                channel
                    .write_all(data)
                    .map_err(|e| after("writing stdin", &e))?;
            }
            channel.send_eof().map_err(|e| after("closing stdin", &e))?;
            let mut stdout = Vec::new();
            let mut stderr = Vec::new();
            channel
                .read_to_end(&mut stdout)
                .map_err(|e| after("reading stdout", &e))?;
            channel
                .stderr()
                .read_to_end(&mut stderr)
                .map_err(|e| after("reading stderr", &e))?;
            channel.wait_close().map_err(|e| after("closing", &e))?;
            let status = channel
                .exit_status()
                .map_err(|e| after("exit status", &e))?;
            let status = if channel
                .exit_signal()
                .ok()
                .and_then(|s| s.exit_signal)
                .is_some()
            {
                -1
            } else {
                status
            };
            Ok(CommandOutput {
                status,
                stdout: String::from_utf8_lossy(&stdout).into_owned(),
                stderr: String::from_utf8_lossy(&stderr).into_owned(),
            })
        })?;
        tracing::debug!(place = %self.place(), %command, status = out.status, "ran over ssh");
        Ok(out)
    }

    fn write_file(&self, path: &str, contents: &[u8], mode: u32) -> Result<(), RunnerError> {
        let failed = |problem: String| RunnerError::Write {
            path: path.to_string(),
            place: self.place(),
            problem,
        };
        self.with_session(|session| {
            let sftp = session
                .sftp()
                .map_err(|e| Failure::BeforeSend(failed(format!("starting SFTP: {e}"))))?;
            let target = Path::new(path);
            let mut parents: Vec<&Path> = target
                .ancestors()
                .skip(1)
                .filter(|p| !p.as_os_str().is_empty() && *p != Path::new("/"))
                .collect();
            parents.reverse();
            for dir in parents {
                if sftp.stat(dir).is_err() {
                    sftp.mkdir(dir, 0o700).map_err(|e| {
                        Failure::AfterSend(failed(format!("creating {}: {e}", dir.display())))
                    })?;
                }
            }
            let mut file = sftp
                .open_mode(
                    target,
                    OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::TRUNCATE,
                    mode as i32,
                    OpenType::File,
                )
                .map_err(|e| Failure::AfterSend(failed(e.to_string())))?;
            // The remote umask applied at creation; an existing file kept its old bits.
            sftp.setstat(
                target,
                FileStat {
                    size: None,
                    uid: None,
                    gid: None,
                    perm: Some(mode),
                    atime: None,
                    mtime: None,
                },
            )
            .map_err(|e| Failure::AfterSend(failed(format!("chmod {mode:o}: {e}"))))?;
            file.write_all(contents)
                .map_err(|e| Failure::AfterSend(failed(e.to_string())))?;
            Ok(())
        })
    }

    fn place(&self) -> String {
        format!("{}@{}:{}", self.user, self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> HostKeyCheck {
        HostKeyCheck::strict(Path::new("/nonexistent/known_hosts"))
    }

    #[test]
    fn a_missing_key_file_is_reported_at_construction() {
        let err = SshRunner::new(
            "root",
            "127.0.0.1",
            22,
            Path::new("/no/such/key"),
            &strict(),
        )
        .err();
        let err = err.expect("must fail");
        assert!(matches!(err, RunnerError::Key { .. }));
        assert!(err.to_string().contains("/no/such/key"), "{err}");
    }

    #[test]
    fn a_closed_port_is_unreachable_with_the_address_in_the_message() {
        let key = tempfile::NamedTempFile::new().unwrap();
        // Port 1 on loopback: nothing listens there.
        let runner = SshRunner::new("root", "127.0.0.1", 1, key.path(), &strict()).unwrap();
        let err = runner.run(&["true"], None).unwrap_err();
        assert!(matches!(err, RunnerError::Unreachable { .. }), "{err}");
        assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
    }
}
