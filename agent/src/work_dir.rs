//! The agent's work directory (task output, run directories, the node cache) must be the
//! agent's own: a directory someone else owns or may write could be swapped or filled
//! under it (links to files the agent then overwrites, planted cache files). The default
//! is a fresh directory with a random name, mode 0700, in the temp dir; an explicit one is
//! created with mode 0700, or, if it exists, must belong to the agent's uid and be
//! writable by nobody else.

use anyhow::{bail, Context};
use hetpilot_protocol::protocol::Assignment;
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

/// Task `a`'s run directory `RUNS/app-A/task-I.N`, fresh (an earlier one is removed,
/// without following the links a task may have left in it) and private (mode 0700, as
/// are the directories made above it). Errors are the task's "could not start" reasons.
pub fn fresh_run_dir(runs: &Path, a: &Assignment) -> Result<PathBuf, String> {
    let dir = runs
        .join(format!("app-{}", a.task.app))
        .join(format!("task-{}.{}", a.task.index, a.attempt));
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot clear {}: {e}", dir.display())),
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
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

    /// A run directory left by an earlier agent, holding a link out: cleared without
    /// following it, and made again private.
    #[test]
    fn a_fresh_run_dir_replaces_a_stale_one_and_is_private() {
        let t = tempfile::tempdir().unwrap();
        let outside = t.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "x").unwrap();
        let a = Assignment {
            task: hetpilot_protocol::TaskRef {
                app: hetpilot_protocol::AppId(5),
                index: 2,
            },
            attempt: 3,
            argv: vec!["true".into()],
            input: "2".into(),
            files: None,
            cores: None,
            resources: Default::default(),
            hosts: Vec::new(),
            launcher: None,
        };
        let runs = t.path().join("runs");
        let stale = runs.join("app-5/task-2.3");
        std::fs::create_dir_all(&stale).unwrap();
        std::os::unix::fs::symlink(&outside, stale.join("link")).unwrap();
        std::fs::write(stale.join("old"), "").unwrap();
        let dir = fresh_run_dir(&runs, &a).unwrap();
        assert_eq!(dir, stale);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        assert!(outside.join("keep").exists());
        let mode = |d: &Path| std::fs::metadata(d).unwrap().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        // Where nothing existed, the directories above it are made private too.
        let new_runs = t.path().join("new/runs");
        let dir = fresh_run_dir(&new_runs, &a).unwrap();
        for d in [&new_runs, &new_runs.join("app-5"), &dir] {
            assert_eq!(mode(d), 0o700, "{}", d.display());
        }
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
