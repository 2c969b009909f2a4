//! The registration token read from a file, leaving behind nothing the agent's tasks could
//! read. Tasks run as the agent's uid, and `/proc/<agent>/cmdline` (readable by everyone,
//! whatever the agent does) names the file: so by default the agent consumes it, removing
//! it once read, or, where it cannot be removed (a directory the agent may not write),
//! emptying it; where neither works (a read-only file system) the agent refuses to start
//! and says how to fix it. A file another user could read (group or other bits set, or
//! owned by another uid) is refused, as ssh refuses such keys. `--keep-token-file` keeps
//! the file, for sites that accept that their tasks can read it.

use anyhow::{bail, Context};
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// What becomes of the token file once read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposal {
    /// Removed (emptied where it cannot be removed): the default.
    Consume,
    /// Left as it is (`--keep-token-file`).
    Keep,
}

/// The contents of the token file `path` (at most `max` + 1 bytes: the caller refuses a
/// longer token), disposed of as `disposal` says. Only a regular file is removed or emptied: a
/// pipe (`--token-file <(...)`) holds nothing once read.
pub fn read(path: &Path, disposal: Disposal, max: usize) -> anyhow::Result<String> {
    let shown = path.display();
    let mut file = File::open(path).with_context(|| format!("reading the token file {shown}"))?;
    let meta = file
        .metadata()
        .with_context(|| format!("reading the token file {shown}"))?;
    check_private(path, &meta)?;
    let consume = disposal == Disposal::Consume && meta.is_file();
    if consume {
        check_single_name(path, &meta)?;
    }
    let mut token = String::new();
    Read::by_ref(&mut file)
        .take(max as u64 + 1)
        .read_to_string(&mut token)
        .with_context(|| format!("reading the token file {shown}"))?;
    if consume {
        remove_or_empty(path)?;
    }
    Ok(token)
}

/// Refuses a file another uid could read: one with group or other permission bits (an ACL
/// granting another user shows in the group bits), or one another uid owns.
fn check_private(path: &Path, meta: &Metadata) -> anyhow::Result<()> {
    let shown = path.display();
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        bail!(
            "the token file {shown} belongs to uid {}, not to this agent's uid {me}, so that \
             user can read it: make a token file of your own (mode 0600)",
            meta.uid()
        );
    }
    if meta.mode() & 0o077 != 0 {
        bail!(
            "the token file {shown} may be read by other users (mode {:o}): make it private \
             with `chmod 600 {shown}`",
            meta.mode() & 0o777,
        );
    }
    Ok(())
}

/// Refuses a file that removing `path` would not take away: `path` is a symbolic link (the
/// file it points to would stay), or the file has other hard links.
fn check_single_name(path: &Path, meta: &Metadata) -> anyhow::Result<()> {
    let shown = path.display();
    let link = std::fs::symlink_metadata(path)
        .with_context(|| format!("reading the token file {shown}"))?;
    if link.file_type().is_symlink() {
        bail!(
            "the token file {shown} is a symbolic link: removing it would leave the token in \
             the file it points to; pass that file's own path (or --keep-token-file to keep \
             the file, which this agent's tasks can then read)"
        );
    }
    if meta.nlink() > 1 {
        bail!(
            "the token file {shown} has {} hard links: removing this one would leave the \
             token under the others; pass a file with a single name (or --keep-token-file \
             to keep the file, which this agent's tasks can then read)",
            meta.nlink()
        );
    }
    Ok(())
}

/// Removes the token file; where that fails, empties it; where that fails too, refuses.
fn remove_or_empty(path: &Path) -> anyhow::Result<()> {
    let Err(removing) = std::fs::remove_file(path) else {
        return Ok(());
    };
    let emptying = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .and_then(|f| f.set_len(0));
    match emptying {
        Ok(()) => {
            tracing::warn!(
                file = %path.display(),
                error = %removing,
                "cannot remove the token file; emptied it instead"
            );
            Ok(())
        }
        Err(emptying) => bail!(
            "cannot remove the token file {shown} ({removing}) nor empty it ({emptying}), so \
             this agent's tasks could read it: put the token file in a directory this agent \
             may write, or pass --keep-token-file to keep it (unsafe on a pilot whose tasks \
             you do not all trust, unless they run with --sandbox bwrap)",
            shown = path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn private_file(dir: &Path, name: &str) -> std::path::PathBuf {
        let f = dir.join(name);
        std::fs::write(&f, "secret\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        f
    }

    #[test]
    fn token_files_must_be_private_and_are_consumed_unless_kept() {
        let dir = tempfile::tempdir().unwrap();
        let f = private_file(dir.path(), "token");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = read(&f, Disposal::Consume, 64).unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
        assert!(f.exists(), "a refused file is left alone");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(&f, Disposal::Keep, 64).unwrap(), "secret\n");
        assert!(f.exists(), "kept on request");
        assert_eq!(read(&f, Disposal::Consume, 64).unwrap(), "secret\n");
        assert!(!f.exists(), "consumed by default");
    }

    #[test]
    fn a_link_or_a_second_name_that_would_keep_the_token_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = private_file(dir.path(), "token");
        let sym = dir.path().join("sym");
        std::os::unix::fs::symlink(&f, &sym).unwrap();
        let err = read(&sym, Disposal::Consume, 64).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(read(&sym, Disposal::Keep, 64).unwrap(), "secret\n");
        let hard = dir.path().join("hard");
        std::fs::hard_link(&f, &hard).unwrap();
        let err = read(&hard, Disposal::Consume, 64).unwrap_err().to_string();
        assert!(err.contains("2 hard links"), "{err}");
        assert!(f.exists() && hard.exists(), "refused files are left alone");
    }

    #[test]
    fn a_file_of_another_uid_is_refused() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // Only root can make a file for another uid; CI runs as root.
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let f = private_file(dir.path(), "token");
        std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
        let err = read(&f, Disposal::Keep, 64).unwrap_err().to_string();
        assert!(err.contains("belongs to uid 65534"), "{err}");
        assert!(f.exists());
    }
}
