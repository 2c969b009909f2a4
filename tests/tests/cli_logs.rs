//! `hetpilot logs` shows a bounded part of a task's output: by default its last lines, saying
//! on stderr that it cut and how to see everything; `--head N`, `--tail N` and `--all`
//! choose.

use hetpilot_e2e::{array_app, Manager};
use std::process::Output;
use std::time::Duration;

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// The output's lines after the header line `--- stdout (PATH) ---`.
fn stdout_lines(text: &str) -> Vec<&str> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("--- stdout"));
    assert!(lines.next().is_some(), "no stdout header in {text}");
    lines.take_while(|l| !l.starts_with("--- ")).collect()
}

#[test]
fn logs_show_a_bounded_part_of_a_long_output_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 1, &[]);
    // 300000 lines, 2 MB.
    let app = m.submit(array_app("long", "seq 1 300000", 1));
    m.wait_finished(app, Duration::from_secs(60));
    let task = format!("{app}.0");

    let o = m.cli(&["logs", &task]);
    let text = stdout(&o);
    let lines = stdout_lines(&text);
    assert_eq!(lines.len(), 100, "the default shows the last 100 lines");
    assert_eq!(lines[0], "299901");
    assert_eq!(lines[99], "300000");
    assert!(text.len() < 10_000, "{} bytes printed", text.len());
    let note = String::from_utf8_lossy(&o.stderr);
    assert!(
        note.contains("stdout: showed the last 100 lines") && note.contains("--all"),
        "{note}"
    );

    let text = stdout(&m.cli(&["logs", &task, "--tail", "3"]));
    assert_eq!(stdout_lines(&text), ["299998", "299999", "300000"]);
    let text = stdout(&m.cli(&["logs", &task, "--head", "2"]));
    assert_eq!(stdout_lines(&text), ["1", "2"]);

    let o = m.cli(&["logs", &task, "--all"]);
    let text = stdout(&o);
    let lines = stdout_lines(&text);
    assert_eq!(lines.len(), 300_000);
    assert_eq!(lines[299_999], "300000");
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let o = m.cli(&["logs", &task, "--head", "2", "--tail", "2"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be used with"));
    let o = m.cli(&["logs", &task, "--tail", "-1"]);
    assert!(!o.status.success(), "{o:?}");
}
