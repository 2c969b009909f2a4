//! [`LocalRunner`]: runs batch commands on this machine with `std::process` (no shell) and
//! writes files with the requested permission bits.

use super::{CommandOutput, CommandRunner, RunnerError};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs commands on the manager's own machine.
#[derive(Debug, Default, Clone)]
pub struct LocalRunner;

impl CommandRunner for LocalRunner {
    fn run(&self, argv: &[&str], stdin: Option<&[u8]>) -> Result<CommandOutput, RunnerError> {
        let spawn_error = |problem: String| RunnerError::Spawn {
            command: shell_words::join(argv),
            place: self.place(),
            problem,
        };
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| spawn_error("empty command".into()))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_error(e.to_string()))?;
        if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(data)
                .map_err(|e| spawn_error(format!("writing its stdin: {e}")))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| spawn_error(e.to_string()))?;
        tracing::debug!(command = %shell_words::join(argv), status = ?out.status.code(), "ran locally");
        Ok(CommandOutput {
            status: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    fn write_file(&self, path: &str, contents: &[u8], mode: u32) -> Result<(), RunnerError> {
        let write_error = |problem: String| RunnerError::Write {
            path: path.to_string(),
            place: self.place(),
            problem,
        };
        if let Some(parent) = Path::new(path)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
        {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| write_error(format!("creating {}: {e}", parent.display())))?;
        }
        // Created with `mode` from the start (never readable by others, even briefly), and
        // set again in case the file existed with other bits.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(path)
            .map_err(|e| write_error(e.to_string()))?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| write_error(format!("chmod {mode:o}: {e}")))?;
        file.write_all(contents)
            .map_err(|e| write_error(e.to_string()))
    }

    fn place(&self) -> String {
        "local".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_argv_without_a_shell_and_feeds_stdin() {
        let out = LocalRunner
            .run(&["cat", "-"], Some(b"$(touch /nonexistent) 'x'"))
            .unwrap();
        assert_eq!(out.status, 0);
        assert_eq!(out.stdout, "$(touch /nonexistent) 'x'");
        let out = LocalRunner.run(&["echo", "a;b", "$HOME"], None).unwrap();
        assert_eq!(out.stdout, "a;b $HOME\n");
    }

    #[test]
    fn reports_exit_status_and_missing_programs() {
        let out = LocalRunner
            .run(&["sh", "-c", "echo err >&2; exit 3"], None)
            .unwrap();
        assert_eq!((out.status, out.stderr.as_str()), (3, "err\n"));
        let err = LocalRunner.run(&["/no/such/program"], None).unwrap_err();
        assert!(matches!(err, RunnerError::Spawn { .. }), "{err}");
        assert!(err.to_string().contains("/no/such/program"), "{err}");
    }

    #[test]
    fn writes_files_with_mode_and_private_parent_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/script.sh");
        let p = path.to_str().unwrap();
        LocalRunner.write_file(p, b"old", 0o644).unwrap();
        LocalRunner.write_file(p, b"#!/bin/sh\n", 0o700).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"#!/bin/sh\n");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        assert_eq!(mode(&dir.path().join("a/b")), 0o700);
    }
}
