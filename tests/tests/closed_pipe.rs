//! Every `hetpilot` command ends quietly when the reader of its output goes away (`hetpilot
//! logs 4.0 --json | head`): no panic, no backtrace, no error line, exit status 141 (as a
//! process stopped by SIGPIPE).

use hetpilot_e2e::{array_app, bin, Manager};
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// A pipe: (read end, write end).
fn pipe() -> (std::fs::File, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: pipe2 succeeded, so both are fresh descriptors owned by nobody else.
    unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            OwnedFd::from_raw_fd(fds[1]),
        )
    }
}

/// Runs `hetpilot ARGS` against `m` as admin with stdout a pipe whose reader takes at most
/// `read_first` bytes and then closes it; returns the exit status and stderr.
fn run_with_reader_closing_after(
    m: &Manager,
    args: &[&str],
    read_first: usize,
) -> (ExitStatus, String) {
    let (mut reader, writer) = pipe();
    let mut cmd = Command::new(bin("hetpilot"));
    if let Some(ca) = m.ca_file() {
        cmd.env("HETPILOT_CA_FILE", ca);
    }
    let mut child = cmd
        .args(args)
        .env_remove("HETPILOT_CONFIG")
        .env("HETPILOT_URL", &m.url)
        .env("HETPILOT_TOKEN", &m.admin)
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = vec![0u8; read_first];
    let mut got = 0;
    while got < read_first {
        match reader.read(&mut first[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    drop(reader);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap(), stderr)
}

#[test]
fn every_command_ends_quietly_when_its_reader_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 2, &[]);
    // Enough output that no reader holds it all in the pipe: 1.2 MB of stdout.
    let app = m.submit(array_app("chatty", "seq 1 200000", 2));
    m.wait_finished(app, Duration::from_secs(60));
    let task = format!("{app}.0");
    let app_id = app.to_string();
    let commands: [&[&str]; 7] = [
        &["logs", &task, "--json"],
        &["logs", &task, "--all"],
        &["tasks", &app_id],
        &["tasks", &app_id, "--json"],
        &["status"],
        &["agents", "--json"],
        &["--help"],
    ];
    for args in commands {
        // A reader that closes before anything is written, and one that reads a little.
        for read_first in [0, 16] {
            let (status, stderr) = run_with_reader_closing_after(&m, args, read_first);
            assert!(
                !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
                "hetpilot {args:?} (reader closed after {read_first} bytes) wrote: {stderr}"
            );
            assert!(stderr.trim().is_empty(), "hetpilot {args:?}: {stderr}");
            assert!(
                status.success() || status.code() == Some(141),
                "hetpilot {args:?} (reader closed after {read_first} bytes): {status}"
            );
        }
    }
    // With every byte read, nothing is cut: the listing ends as it always does.
    let o = m.cli(&["tasks", &app_id]);
    assert!(o.status.success(), "{o:?}");
}
