//! The agent's work directory (task output, run directories, the node cache) must be the
//! agent's own: a directory someone else owns or may write could be swapped or filled
//! under it (links to files the agent then overwrites, planted cache files). The default
//! is a fresh directory with a random name, mode 0700, in the temp dir; an explicit one is
//! created with mode 0700, or, if it exists, must belong to the agent's uid and be
//! writable by nobody else.

use anyhow::{bail, Context};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The work directory to use: `explicit` checked (or created), else a fresh private one.
/// A fresh one is kept when the agent ends (its output files are read afterwards).
pub fn prepare(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    match explicit {
        None => Ok(tempfile::Builder::new()
            .prefix("hetpilot-agent-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .context("creating a work dir in the temp dir")?
            .keep()),
        Some(dir) => {
            private_dir(dir, "work dir (--work-dir)")?;
            Ok(dir.to_path_buf())
        }
    }
}

/// Makes sure `dir` exists and is private to this uid: created with mode 0700, or an
/// existing directory owned by this uid that group and others cannot write. `what` names
/// it in errors.
pub fn private_dir(dir: &Path, what: &str) -> anyhow::Result<()> {
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("creating the {what} {}", dir.display()));
        }
        Err(e) => return Err(e).with_context(|| format!("the {what} {}", dir.display())),
    };
    if !meta.is_dir() {
        bail!("the {what} {} is not a directory", dir.display());
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        bail!(
            "the {what} {} belongs to uid {}, not to this agent's uid {me}: someone else \
             could change what is in it; use a directory of your own (or none, for a fresh \
             private one)",
            dir.display(),
            meta.uid()
        );
    }
    if meta.mode() & 0o022 != 0 {
        bail!(
            "the {what} {} may be written by other users (mode {:o}): make it private with \
             `chmod 700 {}`",
            dir.display(),
            meta.mode() & 0o777,
            dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_default_is_fresh_private_and_unpredictable() {
        let a = prepare(None).unwrap();
        let b = prepare(None).unwrap();
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("hetpilot-agent-"), "{name}");
        assert!(
            !name.ends_with(&std::process::id().to_string()),
            "not named after the pid: {name}"
        );
        for d in [&a, &b] {
            assert_eq!(std::fs::metadata(d).unwrap().mode() & 0o777, 0o700);
            std::fs::remove_dir(d).unwrap();
        }
    }

    #[test]
    fn explicit_dirs_are_created_private_or_must_be_private() {
        let t = tempfile::tempdir().unwrap();
        let new = t.path().join("a/b");
        assert_eq!(prepare(Some(&new)).unwrap(), new);
        assert_eq!(std::fs::metadata(&new).unwrap().mode() & 0o777, 0o700);
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = prepare(Some(&open)).unwrap_err().to_string();
        assert!(err.contains("chmod 700"), "{err}");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(prepare(Some(&open)).is_ok());
        let file = t.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(prepare(Some(&file)).is_err());
    }

    #[test]
    fn a_dir_of_another_uid_is_refused() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // Only root can make a directory for another uid; CI runs as root.
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let theirs = t.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let err = prepare(Some(&theirs)).unwrap_err().to_string();
        assert!(err.contains("belongs to uid 65534"), "{err}");
    }
}
