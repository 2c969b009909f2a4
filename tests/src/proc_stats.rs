//! What the benchmarks and tests read of a process from /proc: its CPU time, its memory,
//! whether it is still alive; and a child's peak memory from `wait4`.

/// (utime + stime) of a process in milliseconds, from `/proc/PID/stat`.
pub fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (1-based) are utime and stime; `after` starts at field 3.
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks * 1000.0 / hz
}

/// A memory figure of `/proc/PID/status` in MiB, by its key (`VmRSS:`, `VmHWM:`).
pub fn rss_mib(pid: u32, key: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<f64>()
        .unwrap()
        / 1024.0
}

/// Whether process `pid` is gone, or a zombie waiting to be reaped.
pub fn is_dead(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Runs `cmd` to its end: its exit status, stdout and stderr, and its peak RSS in KiB (the
/// `ru_maxrss` that `wait4` reports for that one child, whatever else the test runs).
pub fn run_with_peak_rss(cmd: &mut std::process::Command) -> (std::process::Output, u64) {
    use std::os::unix::process::ExitStatusExt;
    let out = tempfile::tempfile().unwrap();
    let err = tempfile::tempfile().unwrap();
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .expect("starting the command");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain integers, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live locals; pid is this process's own child, reaped
        // here (std's handle is then dropped without waiting).
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
    }
    drop(child);
    let read = |mut f: std::fs::File| {
        use std::io::{Read, Seek};
        let mut bytes = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut bytes).unwrap();
        bytes
    };
    let output = std::process::Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: read(out),
        stderr: read(err),
    };
    (output, usage.ru_maxrss as u64)
}
