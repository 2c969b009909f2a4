//! Runs one task as a real child process in its own process group, with stdout and stderr
//! in files, and measures it with `wait4`: wall time, user and system CPU, peak RSS, and
//! how it ended. A timeout or a kill order kills the whole process group.

use hetpilot_shared::protocol::{AppRuntime, Assignment, Outcome};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Bytes of output kept in a report.
const TAIL_BYTES: u64 = 4096;

pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A started task.
pub struct Running {
    pub pid: i32,
    pub started_at_ms: u64,
    pub started: Instant,
    pub stdout_path: PathBuf,
    pub stderr_path: PathBuf,
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

/// Where a task's output goes: `OUTPUT_DIR/app-APP/task-INDEX.ATTEMPT.{out,err}`.
pub fn output_paths(base: &Path, a: &Assignment) -> (PathBuf, PathBuf) {
    let dir = base.join(format!("app-{}", a.task.app));
    let stem = format!("task-{}.{}", a.task.index, a.attempt);
    (
        dir.join(format!("{stem}.out")),
        dir.join(format!("{stem}.err")),
    )
}

/// Starts the task; errors are "could not start" reasons.
pub fn start(
    a: &Assignment,
    app: &AppRuntime,
    work_dir: &Path,
    output_base: &Path,
) -> Result<Running, String> {
    let (out, err) = output_paths(output_base, a);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create output directory {}: {e}", dir.display()))?;
    }
    let open =
        |p: &Path| File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()));
    let (stdout, stderr) = (open(&out)?, open(&err)?);
    let program = a.argv.first().ok_or("empty command")?;
    let cwd = match &app.workdir {
        Some(dir) => work_dir.join(dir),
        None => work_dir.to_path_buf(),
    };
    let mut cmd = Command::new(program);
    cmd.args(&a.argv[1..])
        .current_dir(&cwd)
        .envs(&app.env)
        .env("HETPILOT_TASK", a.task.to_string())
        .env("HETPILOT_APP", a.task.app.to_string())
        .env("HETPILOT_INDEX", a.task.index.to_string())
        .env("HETPILOT_ATTEMPT", a.attempt.to_string())
        .env("HETPILOT_INPUT", &a.input)
        .env_remove("HETPILOT_AGENT_TOKEN")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    let started_at_ms = unix_ms();
    let started = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{program}` in {}: {e}", cwd.display()))?;
    Ok(Running {
        pid: child.id() as i32,
        started_at_ms,
        started,
        stdout_path: out,
        stderr_path: err,
    })
    // The `Child` is dropped without waiting: `wait_for` reaps it with wait4.
}

/// Blocks until the task's process ends and returns its measurements.
pub fn wait_for(pid: i32, started: Instant, timed_out: impl Fn() -> bool) -> Finished {
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our own child; status and usage point to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // Nothing to wait for (should not happen): report what is known.
            status = 0x7f00;
            break;
        }
    }
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let tv_ms = |tv: libc::timeval| tv.tv_sec as f64 * 1000.0 + tv.tv_usec as f64 / 1000.0;
    let exit = std::process::ExitStatus::from_raw(status);
    let (outcome, exit_code, signal) = match (exit.code(), exit.signal()) {
        (Some(0), _) => (Outcome::Success, Some(0), None),
        (Some(c), _) => (Outcome::Failed, Some(c), None),
        (None, sig) if timed_out() => (Outcome::TimedOut, None, sig),
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

/// Kills a task's whole process group.
pub fn kill_group(pid: i32) {
    // SAFETY: signalling a process group we created; errors (already gone) are harmless.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// The last few KiB of a file, if it is not empty.
pub fn tail(path: &Path) -> Option<String> {
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    if len == 0 {
        return None;
    }
    f.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))
        .ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// How long the task may run.
pub fn timeout_of(app: &AppRuntime) -> Option<Duration> {
    app.timeout_secs.map(Duration::from_secs)
}
