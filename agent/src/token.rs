//! The registration token, kept out of tasks' reach. It comes from `--token-file` (a file
//! only its owner may read, consumed once read: see `token_file`) or from
//! `HETPILOT_AGENT_TOKEN`. A variable stays in `/proc/PID/environ` whatever the
//! process does to its environment afterwards, so an agent given the token that way
//! re-executes itself without it and receives the value on an inherited pipe instead. The
//! agent then makes itself non-dumpable, so processes of its uid (its tasks) can open
//! neither its `/proc` files nor its memory.

use crate::token_file::{self, Disposal};
use anyhow::{bail, Context};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;

/// The variable a token may be given in.
pub const ENV: &str = "HETPILOT_AGENT_TOKEN";
/// The variable naming the pipe a re-executed agent reads its token from.
const FD_ENV: &str = "HETPILOT_AGENT_TOKEN_FD";
/// Longer than any token the manager makes; the whole value must fit in a pipe's buffer.
const MAX_TOKEN: usize = 16 * 1024;

/// If the token is in this process's environment, re-executes the agent (same pid, same
/// arguments) with an environment lacking it and the token on an inherited pipe. Returns
/// only when there was nothing to do. Call it before any thread is started.
pub fn drop_from_environment() -> anyhow::Result<()> {
    let Some(token) = std::env::var_os(ENV) else {
        return Ok(());
    };
    if token.len() > MAX_TOKEN {
        bail!("{ENV} is longer than {MAX_TOKEN} bytes: it is not a registration token");
    }
    let (read, write) = pipe()?;
    let mut write = std::fs::File::from(write);
    write
        .write_all(token.as_encoded_bytes())
        .context("handing the token over on a pipe")?;
    drop(write);
    // The read end is the one descriptor the new image inherits.
    // SAFETY: clearing FD_CLOEXEC on a descriptor we own.
    if unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
        bail!(
            "clearing close-on-exec on the token pipe: {}",
            std::io::Error::last_os_error()
        );
    }
    let mut args = std::env::args_os();
    let argv0 = args
        .next()
        .unwrap_or_else(|| OsString::from("hetpilot-agent"));
    let err = std::process::Command::new("/proc/self/exe")
        .arg0(argv0)
        .args(args)
        .env_remove(ENV)
        .env(FD_ENV, read.as_raw_fd().to_string())
        .exec();
    bail!(
        "cannot re-execute the agent to drop {ENV} from its environment ({err}); pass the token \
         in a file instead: --token-file FILE"
    )
}

/// A pipe, both ends close-on-exec.
fn pipe() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe: {}", std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned these descriptors; nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The registration token: from the pipe of a re-executed agent, else from `file` (checked
/// and disposed of as `token_file` says), else an error saying how to give one. Both at
/// once are refused: the file would be left unread, and readable by tasks.
pub fn read(file: Option<&Path>, disposal: Disposal) -> anyhow::Result<String> {
    let token = match (std::env::var(FD_ENV).ok(), file) {
        (Some(_), Some(f)) => bail!(
            "the token was given twice, in {ENV} and in the file {}: pass only one",
            f.display()
        ),
        (Some(fd), None) => from_pipe(&fd)?,
        (None, Some(f)) => token_file::read(f, disposal, MAX_TOKEN)?,
        (None, None) => {
            bail!("no registration token: pass --token-file FILE (mode 0600) or set {ENV}")
        }
    };
    if token.len() > MAX_TOKEN {
        bail!("the registration token is longer than {MAX_TOKEN} bytes: it is not one");
    }
    let token = token.trim().to_string();
    if token.is_empty() {
        bail!("the registration token is empty");
    }
    Ok(token)
}

fn from_pipe(fd: &str) -> anyhow::Result<String> {
    let fd: i32 = fd
        .parse()
        .ok()
        .filter(|&fd| fd > 2)
        .with_context(|| format!("{FD_ENV}={fd} is not a descriptor"))?;
    // SAFETY: the agent's previous image made this descriptor for us and nothing else in
    // this process refers to it; it is closed when the File is dropped.
    let mut pipe = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut token = String::new();
    Read::by_ref(&mut pipe)
        .take(MAX_TOKEN as u64 + 1)
        .read_to_string(&mut token)
        .context("reading the registration token from the pipe it was handed over on")?;
    Ok(token)
}

/// Makes this process non-dumpable: processes of the same uid (its tasks) can no longer
/// open its `/proc/PID` files (environ, mem, fds) or attach to it. Children start
/// dumpable again at exec.
pub fn make_undumpable() -> anyhow::Result<()> {
    // SAFETY: PR_SET_DUMPABLE takes an integer argument and changes only this process.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        bail!(
            "prctl(PR_SET_DUMPABLE): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}
