//! The lock a running manager holds on its data directory: `manager.lock`, an advisory
//! `flock` taken by `hetpilot serve` for as long as it runs and released by the kernel
//! when the process ends, however it ends (a SIGKILL leaves no stale lock). A second
//! manager on the same directory, and `hetpilot restore` into it, are refused while it is
//! held. The file holds the holder's process id, for the message.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The lock file of a data directory.
pub fn lock_path(data_dir: &Path) -> PathBuf {
    data_dir.join("manager.lock")
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "a manager is running on {dir} ({holder} holds {path}); stop it first (SIGTERM)",
        dir = .dir.display(), path = .path.display()
    )]
    Held {
        dir: PathBuf,
        path: PathBuf,
        holder: String,
    },
    #[error("cannot lock {path}: {cause}", path = .path.display())]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// Held while this value lives; dropping it (or the process ending) releases the lock.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

impl DataDirLock {
    /// Takes the lock of the existing directory `data_dir` without waiting, and records this
    /// process's id in it.
    pub fn acquire(data_dir: &Path) -> Result<DataDirLock, LockError> {
        let path = lock_path(data_dir);
        let io = |cause| LockError::Io {
            path: path.clone(),
            cause,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        // SAFETY: flock on a descriptor this function owns; it has no other preconditions.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut pid = String::new();
                // The holder's id is for the message only: unreadable, it is left out.
                let _ = file.read_to_string(&mut pid);
                let holder = match pid.trim().parse::<u32>() {
                    Ok(pid) => format!("process {pid}"),
                    Err(_) => "another process".to_string(),
                };
                return Err(LockError::Held {
                    dir: data_dir.to_path_buf(),
                    path,
                    holder,
                });
            }
            return Err(io(err));
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(DataDirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataDirLock::acquire(dir.path()).unwrap();
        let refused = DataDirLock::acquire(dir.path()).unwrap_err();
        let message = refused.to_string();
        assert!(
            message.contains(&format!("process {}", std::process::id())),
            "{message}"
        );
        assert!(message.contains("stop it first"), "{message}");
        drop(first);
        DataDirLock::acquire(dir.path()).expect("free again once released");
    }
}
