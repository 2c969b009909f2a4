//! Waits for a started task's process (on a pidfd, no thread per task) and measures it
//! with `wait4`: wall time, user and system CPU, peak RSS, and how it ended. A timeout or
//! a kill order kills the whole process group.

use hetpilot_protocol::protocol::{AppRuntime, Outcome};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// How a task's process ended, as measured.
#[derive(Debug, Clone)]
pub struct Finished {
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub wall_ms: f64,
    pub user_cpu_ms: f64,
    pub sys_cpu_ms: f64,
    pub max_rss_kb: u64,
    pub ended_at_ms: u64,
}

/// Reaps the task's (exited or exiting) process with wait4 and returns its measurements.
fn reap(pid: i32, started: Instant, timed_out: bool) -> Finished {
    loop {
        match wait4(pid, 0) {
            Some(Ok((status, usage))) => return measured(status, &usage, started, timed_out),
            Some(Err(e)) if e.raw_os_error() == Some(libc::EINTR) => {}
            // Nothing to wait for (should not happen): report what is known.
            // SAFETY: an all-zero rusage is a valid value.
            _ => return measured(0x7f00, &unsafe { std::mem::zeroed() }, started, timed_out),
        }
    }
}

/// Reaps the task's process if it has exited; `None` while it runs.
pub fn try_reap(pid: i32, started: Instant) -> Option<Finished> {
    match wait4(pid, libc::WNOHANG) {
        Some(Ok((status, usage))) => Some(measured(status, &usage, started, false)),
        Some(Err(_)) => Some(reap(pid, started, false)),
        None => None,
    }
}

/// wait4 on `pid`: its status and rusage, `None` if `WNOHANG` and it has not exited.
fn wait4(pid: i32, flags: libc::c_int) -> Option<std::io::Result<(libc::c_int, libc::rusage)>> {
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own child; status and usage point to live locals.
    match unsafe { libc::wait4(pid, &mut status, flags, &mut usage) } {
        0 => None,
        r if r == pid => {
            crate::spawner::reaped(pid);
            Some(Ok((status, usage)))
        }
        _ => Some(Err(std::io::Error::last_os_error())),
    }
}

fn measured(
    status: libc::c_int,
    usage: &libc::rusage,
    started: Instant,
    timed_out: bool,
) -> Finished {
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let tv_ms = |tv: libc::timeval| tv.tv_sec as f64 * 1000.0 + tv.tv_usec as f64 / 1000.0;
    let exit = std::process::ExitStatus::from_raw(status);
    let (outcome, exit_code, signal) = match (exit.code(), exit.signal()) {
        (Some(0), _) => (Outcome::Success, Some(0), None),
        (Some(c), _) => (Outcome::Failed, Some(c), None),
        (None, sig) if timed_out => (Outcome::TimedOut, None, sig),
        (None, sig) => (Outcome::Signaled, None, sig),
    };
    Finished {
        outcome,
        exit_code,
        signal,
        wall_ms,
        user_cpu_ms: tv_ms(usage.ru_utime),
        sys_cpu_ms: tv_ms(usage.ru_stime),
        max_rss_kb: usage.ru_maxrss.max(0) as u64,
        ended_at_ms: unix_ms(),
    }
}

/// A pidfd: readable once the process has exited, so waiting costs no thread.
fn pidfd(pid: i32) -> Option<AsyncFd<OwnedFd>> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    // SAFETY: we own `fd`, and it stays open for as long as the AsyncFd that holds it.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.ok()
}

/// When a task started at `started` with `timeout` must be killed; `None` for no limit,
/// and for a limit so far away that the clock cannot express it (the manager bounds
/// timeouts, but a deadline past the end of time is no deadline, never a panic).
pub fn deadline(started: Instant, timeout: Option<Duration>) -> Option<Instant> {
    timeout.and_then(|t| started.checked_add(t))
}

/// Waits for the task's process to end, killing its process group `timeout` after it
/// started.
pub async fn wait_exit(pid: i32, started: Instant, timeout: Option<Duration>) -> Finished {
    let deadline = deadline(started, timeout);
    let limit = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    match pidfd(pid) {
        Some(fd) => {
            let timed_out = tokio::select! {
                _ = fd.readable() => false,
                _ = limit => true,
            };
            if timed_out {
                kill_group(pid);
                let _ = fd.readable().await;
            }
            reap(pid, started, timed_out)
        }
        // Kernels without pidfd (before 5.3): wait on a blocking thread instead.
        None => {
            let mut wait = tokio::task::spawn_blocking(move || reap(pid, started, false));
            let timed_out = tokio::select! {
                _ = &mut wait => false,
                _ = limit => true,
            };
            if timed_out {
                kill_group(pid);
            }
            let mut finished = wait.await.unwrap_or_else(|_| reap(pid, started, timed_out));
            if timed_out && finished.outcome == Outcome::Signaled {
                finished.outcome = Outcome::TimedOut;
            }
            finished
        }
    }
}

/// Kills a task's whole process group.
pub fn kill_group(pid: i32) {
    // SAFETY: signalling a process group we created; errors (already gone) are harmless.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// How long the task may run.
pub fn timeout_of(app: &AppRuntime) -> Option<Duration> {
    app.timeout_secs.map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_timeout_past_the_end_of_time_is_no_deadline() {
        let now = Instant::now();
        assert_eq!(deadline(now, None), None);
        assert_eq!(deadline(now, Some(Duration::from_secs(u64::MAX))), None);
        assert_eq!(
            deadline(now, Some(Duration::from_secs(i64::MAX as u64))),
            None
        );
        assert_eq!(
            deadline(now, Some(Duration::from_secs(5))),
            Some(now + Duration::from_secs(5))
        );
    }

    /// The attacker's probe: a task with a timeout of i64::MAX seconds must run and be
    /// reaped like any other (the watcher used to panic on `started + timeout`).
    #[tokio::test]
    #[allow(clippy::zombie_processes)] // reaped by wait_exit's wait4
    async fn a_huge_timeout_neither_panics_nor_kills() {
        let child = std::process::Command::new("/bin/sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let started = Instant::now();
        let timeout = timeout_of(&AppRuntime {
            timeout_secs: Some(i64::MAX as u64),
            ..test_app()
        });
        let finished = wait_exit(pid, started, timeout).await;
        assert_eq!(finished.outcome, Outcome::Success);
        assert!(finished.wall_ms >= 150.0, "{}", finished.wall_ms);
    }

    #[tokio::test]
    #[allow(clippy::zombie_processes)] // reaped by wait_exit's wait4
    async fn a_timeout_still_kills_the_task() {
        let child = std::process::Command::new("/bin/sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let finished = wait_exit(
            child.id() as i32,
            Instant::now(),
            Some(Duration::from_millis(200)),
        )
        .await;
        assert_eq!(finished.outcome, Outcome::TimedOut);
        assert!(finished.wall_ms < 10_000.0, "{}", finished.wall_ms);
    }

    fn test_app() -> AppRuntime {
        AppRuntime {
            app: hetpilot_protocol::AppId(1),
            name: "t".into(),
            cores: 1,
            env: Default::default(),
            workdir: None,
            output_dir: None,
            timeout_secs: None,
            files: None,
        }
    }
}
