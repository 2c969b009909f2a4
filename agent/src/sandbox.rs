//! The per-task bubblewrap sandbox (`--sandbox bwrap`), which keeps users who share an
//! agent apart. Each task sees the host read-only, with a private `/tmp`, `/dev`, IPC and
//! PID namespace (so neither the agent nor other tasks are visible in `/proc`), no
//! capabilities, and its own session. The agent's work dir, cache and home are covered
//! by empty tmpfs mounts, and the agent's key and token files by `/dev/null`. Only the
//! task's run directory is writable; its staged inputs are bound read-only (writing to one,
//! or changing its mode, would change the shared cached copy). The task's environment is
//! given as `--setenv` arguments: bwrap itself runs with an empty one, so nothing a user
//! sets (`LD_PRELOAD`, ...) acts on it outside the sandbox.
//!
//! bwrap stays the task's parent: the agent waits for it (its rusage includes the task's)
//! and kills its process group at a timeout or on order; `--die-with-parent` and the PID
//! namespace take every process of the task with it. The task is PID 1 of its namespace
//! (so bwrap reaps it and wait4 on bwrap includes its CPU time), and a task killed by a
//! signal shows as exit code 128 + the signal (bwrap reports it so).

use anyhow::{bail, Context};
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How tasks are isolated (`--sandbox`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Tasks are plain processes of the agent's uid.
    #[default]
    None,
    /// Each task runs in a bubblewrap sandbox; the agent refuses to start without a working
    /// `bwrap`.
    Bwrap,
}

/// A checked, working bwrap and what it must hide from tasks.
#[derive(Debug)]
pub struct Sandbox {
    bwrap: CString,
    /// Directories covered by an empty tmpfs (the agent's home, work dir, cache).
    hidden_dirs: Vec<PathBuf>,
    /// Files covered by `/dev/null` (the agent's SFTP key, a kept token file).
    hidden_files: Vec<PathBuf>,
    /// Running as root: without a user namespace, so capabilities must be dropped. As
    /// another user, bwrap makes a user namespace, and nested ones are refused.
    root: bool,
}

/// What a sandboxed task gets: its run directory (writable, its working directory), the
/// files in it bound read-only, and its environment.
pub struct TaskView<'a> {
    pub run_dir: &'a Path,
    pub read_only: &'a [PathBuf],
    /// `KEY=VALUE` entries.
    pub env: &'a [&'a [u8]],
    /// Device files the task may open (its GPUs' and their drivers' control files); the
    /// sandbox's `/dev` has no others.
    pub devices: &'a [PathBuf],
}

impl Sandbox {
    /// Finds bwrap on `PATH` and checks that a task can start with the flags used for
    /// tasks (a site that asked for isolation must not silently get none).
    pub fn new(
        work_dir: &Path,
        hidden_dirs: Vec<PathBuf>,
        hidden_files: Vec<PathBuf>,
    ) -> anyhow::Result<Sandbox> {
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
        let bwrap = std::env::split_paths(&path)
            .map(|d| d.join("bwrap"))
            .find(|p| p.is_file())
            .context(
                "--sandbox bwrap: bubblewrap (`bwrap`) is not on PATH; install it (Debian/Ubuntu: \
                 apt-get install bubblewrap; RHEL: dnf install bubblewrap) or run without --sandbox",
            )?;
        let sandbox = Sandbox {
            bwrap: cstring(bwrap.as_os_str())?,
            hidden_dirs: hidden_dirs.into_iter().filter(|d| d.is_dir()).collect(),
            hidden_files: hidden_files.into_iter().filter(|f| f.exists()).collect(),
            // SAFETY: geteuid has no preconditions.
            root: unsafe { libc::geteuid() } == 0,
        };
        sandbox.check(work_dir)?;
        Ok(sandbox)
    }

    /// Runs `true` the way tasks run, in a scratch run directory.
    fn check(&self, work_dir: &Path) -> anyhow::Result<()> {
        let run_dir = work_dir.join("runs").join("sandbox-check");
        std::fs::create_dir_all(&run_dir)
            .with_context(|| format!("creating {}", run_dir.display()))?;
        let path = b"PATH=/usr/bin:/bin".as_slice();
        let view = TaskView {
            run_dir: &run_dir,
            read_only: &[],
            env: &[path],
            devices: &[],
        };
        let argv = self
            .argv(&view, &[CString::new("true").expect("no NUL")])
            .map_err(anyhow::Error::msg)?;
        let out = std::process::Command::new(OsStr::from_bytes(self.bwrap.as_bytes()))
            .args(argv[1..].iter().map(|a| OsStr::from_bytes(a.as_bytes())))
            .env_clear()
            .current_dir(&run_dir)
            .output()
            .context("starting bwrap")?;
        let _ = std::fs::remove_dir(&run_dir);
        if !out.status.success() {
            bail!(
                "--sandbox bwrap: bubblewrap cannot start a sandbox on this node ({}): {}; \
                 unprivileged user namespaces may be disabled (sysctl \
                 kernel.unprivileged_userns_clone or user.max_user_namespaces, or AppArmor's \
                 restriction on Ubuntu 24.04). Tasks are not run without the sandbox that was \
                 asked for.",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }

    /// The path of the bwrap binary, for `posix_spawn`.
    pub fn program(&self) -> &CString {
        &self.bwrap
    }

    /// bwrap's full argv (starting with its own path) running `command` in `view`.
    pub fn argv(&self, view: &TaskView, command: &[CString]) -> Result<Vec<CString>, String> {
        let mut a: Vec<CString> = Vec::with_capacity(40 + 3 * view.env.len() + command.len());
        let mut flag = |s: &str| a.push(CString::new(s).expect("flags have no NUL"));
        flag("bwrap");
        flag("--die-with-parent");
        flag("--new-session");
        flag("--unshare-pid");
        // The task is the namespace's init, reaped by bwrap itself: wait4 on bwrap then
        // carries the task's CPU time (bwrap's own init would exit unreaped).
        flag("--as-pid-1");
        flag("--unshare-ipc");
        if !self.root {
            flag("--unshare-user");
            flag("--disable-userns");
        }
        flag("--cap-drop");
        flag("ALL");
        flag("--ro-bind");
        flag("/");
        flag("/");
        flag("--dev");
        flag("/dev");
        flag("--proc");
        flag("/proc");
        flag("--tmpfs");
        flag("/tmp");
        let path = |p: &Path| cstring(p.as_os_str()).map_err(|e| e.to_string());
        let pair = |a: &mut Vec<CString>, op: &str, from: &Path, to: &Path| {
            a.push(CString::new(op).expect("flags have no NUL"));
            a.push(path(from)?);
            a.push(path(to)?);
            Ok::<(), String>(())
        };
        // The fresh /dev holds null, zero, random, tty and the like: a GPU the task was
        // granted is added, device file by device file.
        for d in view.devices {
            pair(&mut a, "--dev-bind", d, d)?;
        }
        for d in &self.hidden_dirs {
            a.push(CString::new("--tmpfs").expect("no NUL"));
            a.push(path(d)?);
        }
        for f in &self.hidden_files {
            pair(&mut a, "--ro-bind", Path::new("/dev/null"), f)?;
        }
        pair(&mut a, "--bind", view.run_dir, view.run_dir)?;
        for f in view.read_only {
            pair(&mut a, "--ro-bind", f, f)?;
        }
        // The tmpfs mounts over hidden directories take no writes either.
        for d in &self.hidden_dirs {
            a.push(CString::new("--remount-ro").expect("no NUL"));
            a.push(path(d)?);
        }
        a.push(CString::new("--chdir").expect("no NUL"));
        a.push(path(view.run_dir)?);
        a.push(CString::new("--clearenv").expect("no NUL"));
        for kv in view.env {
            let eq = kv.iter().position(|&b| b == b'=').unwrap_or(kv.len());
            let (k, v) = (&kv[..eq], kv.get(eq + 1..).unwrap_or_default());
            a.push(CString::new("--setenv").expect("no NUL"));
            a.push(CString::new(k).map_err(|_| "an environment variable contains a NUL byte")?);
            a.push(CString::new(v).map_err(|_| "an environment variable contains a NUL byte")?);
        }
        a.push(CString::new("--").expect("no NUL"));
        a.extend(command.iter().cloned());
        Ok(a)
    }
}

fn cstring(s: &OsStr) -> anyhow::Result<CString> {
    CString::new(s.as_bytes()).with_context(|| format!("{s:?} contains a NUL byte"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_view_hides_first_then_binds_its_run_dir_and_inputs() {
        let s = Sandbox {
            bwrap: CString::new("/usr/bin/bwrap").unwrap(),
            hidden_dirs: vec!["/w".into()],
            hidden_files: vec!["/k".into()],
            root: true,
        };
        let env: [&[u8]; 2] = [b"A=1=2", b"EMPTY="];
        let argv = s
            .argv(
                &TaskView {
                    run_dir: Path::new("/w/runs/r"),
                    read_only: &["/w/runs/r/in".into()],
                    env: &env,
                    devices: &[],
                },
                &[CString::new("cmd").unwrap(), CString::new("x y").unwrap()],
            )
            .unwrap();
        let text: Vec<String> = argv
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        let joined = text.join(" ");
        let at = |s: &str| joined.find(s).unwrap_or_else(|| panic!("{s} in {joined}"));
        assert!(at("--ro-bind / /") < at("--tmpfs /w"));
        assert!(at("--tmpfs /w") < at("--bind /w/runs/r /w/runs/r"));
        assert!(at("--bind /w/runs/r") < at("--ro-bind /w/runs/r/in /w/runs/r/in"));
        assert!(joined.contains("--ro-bind /dev/null /k"));
        assert!(at("--ro-bind /w/runs/r/in") < at("--remount-ro /w"));
        assert!(joined.contains("--as-pid-1"));
        assert!(joined.contains("--cap-drop ALL"));
        assert!(joined.contains("--clearenv --setenv A 1=2 --setenv EMPTY  --"));
        assert_eq!(&text[text.len() - 3..], ["--", "cmd", "x y"]);
    }

    #[test]
    fn only_the_granted_device_files_are_added_to_the_fresh_dev() {
        let s = Sandbox {
            bwrap: CString::new("/usr/bin/bwrap").unwrap(),
            hidden_dirs: vec![],
            hidden_files: vec![],
            root: true,
        };
        let devices = [
            PathBuf::from("/dev/nvidia1"),
            PathBuf::from("/dev/nvidiactl"),
        ];
        let argv = s
            .argv(
                &TaskView {
                    run_dir: Path::new("/w/r"),
                    read_only: &[],
                    env: &[],
                    devices: &devices,
                },
                &[CString::new("cmd").unwrap()],
            )
            .unwrap();
        let joined: String = argv
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let at = |s: &str| joined.find(s).unwrap_or_else(|| panic!("{s} in {joined}"));
        assert!(at("--dev /dev") < at("--dev-bind /dev/nvidia1 /dev/nvidia1"));
        assert!(joined.contains("--dev-bind /dev/nvidiactl /dev/nvidiactl"));
        assert_eq!(joined.matches("--dev-bind").count(), 2, "{joined}");
        // Without a grant, no device file is bound at all.
        let bare = s
            .argv(
                &TaskView {
                    run_dir: Path::new("/w/r"),
                    read_only: &[],
                    env: &[],
                    devices: &[],
                },
                &[CString::new("cmd").unwrap()],
            )
            .unwrap();
        assert!(!bare.iter().any(|c| c.to_bytes() == b"--dev-bind"));
    }
}
