//! Stops every pilot a test's manager recorded, whatever happened to the manager: a test's
//! manager is SIGKILLed when it is dropped (no clean shutdown), and pilots started through
//! Slurm, the PBS/TORQUE wrappers (Slurm jobs in the lab), SSH or the `local` adapter
//! (`setsid nohup`, in their own session) would otherwise outlive their test, retrying a
//! manager that is gone until their `--give-up-secs` ends. `Manager`'s `Drop` calls
//! [`stop_recorded`], so a test that fails (panics) cleans up as one that passes does.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The batch ids of the pilots recorded in the database of data directory `dir` (none if
/// it has no database or no pilot table).
fn recorded(dir: &Path) -> Vec<String> {
    let Ok(db) = rusqlite::Connection::open_with_flags(
        dir.join("hetpilot.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) else {
        return Vec::new();
    };
    db.prepare("SELECT batch_job_id FROM pilots WHERE batch_job_id IS NOT NULL")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_default()
}

/// A process started by the `ssh` or `local` adapter: `host:pid@START`, START being its
/// start time as `ps -o lstart` gives it with spaces as `-` and colons as `.`.
struct ProcessJob<'a> {
    host: &'a str,
    pid: i32,
    start: Option<&'a str>,
}

fn process_job(id: &str) -> Option<ProcessJob<'_>> {
    let (host, rest) = id.split_once(':')?;
    let (pid, start) = match rest.split_once('@') {
        Some((pid, start)) => (pid, Some(start)),
        None => (rest, None),
    };
    Some(ProcessJob {
        host,
        pid: pid.parse().ok().filter(|p| *p > 1)?,
        start,
    })
}

/// Whether process `pid` is the one that started at `start` (a reused pid is not).
fn started_at(pid: i32, start: Option<&str>) -> bool {
    let Some(start) = start else { return true };
    let Ok(out) = Command::new("ps")
        .args(["-o", "lstart=", "-p", &pid.to_string()])
        .env("LC_ALL", "C")
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let words: Vec<&str> = text.split_whitespace().collect();
    words.join("-").replace(':', ".") == start
}

/// Whether any process of group `pgid` is left.
fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks that the group exists.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// SIGTERM to the pilot's process group (the adapters start it as a session leader), up to
/// 10 s for it to go, then SIGKILL. Only on this machine: the lab's SSH host is 127.0.0.1.
fn stop_process(job: &ProcessJob<'_>) {
    if !["localhost", "127.0.0.1", "::1"].contains(&job.host) || !started_at(job.pid, job.start) {
        return;
    }
    // SAFETY: signalling the process group of a pilot this test's manager started.
    unsafe { libc::kill(-job.pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while group_alive(job.pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if group_alive(job.pid) {
        // SAFETY: as above.
        unsafe { libc::kill(-job.pid, libc::SIGKILL) };
    }
}

/// Cancels Slurm jobs `ids` (PBS/TORQUE ids of the lab's wrappers are Slurm's, maybe with
/// a `.server` suffix) and waits up to 60 s until Slurm no longer lists them, so their
/// agents are gone when this returns.
fn cancel_slurm(ids: &[&str]) {
    let ids: Vec<&str> = ids
        .iter()
        .filter_map(|id| id.split('.').next())
        .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    if ids.is_empty() {
        return;
    }
    let conf = crate::lab::slurm_conf();
    let slurm = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .env("SLURM_CONF", &conf)
            .output()
    };
    if slurm("scancel", &ids).is_err() {
        return; // no Slurm here: nothing was submitted to it
    }
    let list = ids.join(",");
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match slurm("squeue", &["-h", "-o", "%i", "-j", &list]) {
            Ok(out) if !String::from_utf8_lossy(&out.stdout).trim().is_empty() => {
                std::thread::sleep(Duration::from_millis(100));
            }
            _ => return,
        }
    }
}

/// Stops every pilot recorded in data directory `dir`: processes of the `ssh` and `local`
/// adapters on this machine, and Slurm jobs. Returns once they are gone (bounded waits).
pub fn stop_recorded(dir: &Path) {
    let ids = recorded(dir);
    let mut batch = Vec::new();
    for id in &ids {
        // A multi-host ssh pilot's id joins its processes' with `+`.
        let processes: Option<Vec<ProcessJob<'_>>> = id.split('+').map(process_job).collect();
        match processes {
            Some(jobs) => jobs.iter().for_each(stop_process),
            None => batch.push(id.as_str()),
        }
    }
    cancel_slurm(&batch);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_job_ids_are_read_and_batch_ids_are_not() {
        let j = process_job("127.0.0.1:4242@Tue-Nov-24-18.39.55-2026").unwrap();
        assert_eq!(
            (j.host, j.pid, j.start),
            ("127.0.0.1", 4242, Some("Tue-Nov-24-18.39.55-2026"))
        );
        let two: Vec<_> = "localhost:5@A-b-1-2-3+127.0.0.1:6"
            .split('+')
            .map(|p| process_job(p).unwrap().pid)
            .collect();
        assert_eq!(two, [5, 6]);
        let j = process_job("localhost:77").unwrap();
        assert_eq!((j.host, j.pid, j.start), ("localhost", 77, None));
        assert!(process_job("4242").is_none());
        assert!(process_job("549.moab").is_none());
        assert!(process_job("host:1").is_none(), "never init's group");
    }

    #[test]
    fn a_stamp_that_is_not_the_process_start_stops_nothing() {
        let me = std::process::id() as i32;
        assert!(!started_at(me, Some("Mon-Jan-1-00.00.00-1990")));
        assert!(started_at(me, None));
    }
}
