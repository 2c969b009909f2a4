//! End-to-end checks of `hetpilot-research simulate alloc` and `simulate fairshare`
//! through the real binary: bad input, and a small shipped trace. The last test reads
//! ../shared/data (the real SDSC-SP2 and wagap traces) and skips when they are absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn research(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetpilot-research"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("hetpilot-research runs")
}

/// `hetpilot-research simulate alloc` of the `swf` trace, with `args` after it.
fn simulate_alloc(swf: &Path, args: &[&str]) -> Output {
    let swf = swf.to_str().expect("a UTF-8 path");
    research(&[&["simulate", "alloc", "--swf", swf], args].concat())
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn line_with<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?} in\n{text}"))
}

#[test]
fn bad_input_gives_clear_errors() {
    let swf = fixture("small.swf");
    let out = simulate_alloc(&swf, &["--clusters", ""]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cluster list is empty"));
    let out = simulate_alloc(&swf, &["--clusters", "2,4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs 8 processors but the largest cluster has 4"),
        "{err}"
    );
    let out = simulate_alloc(&swf, &["--strict"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 8"),
        "strict mode names the malformed line"
    );
}

#[test]
fn simulate_alloc_reports_metrics_and_skipped_lines() {
    let swf = fixture("small.swf");
    let out = simulate_alloc(
        &swf,
        &[
            "--clusters",
            "8,16",
            "--allocator",
            "tlpa",
            "--depth",
            "4",
            "--load",
            "0.6",
        ],
    );
    let text = stdout(&out);
    assert!(text.contains("fcfs + tlpa-d4"), "{text}");
    assert!(line_with(&text, "jobs").ends_with(" 5"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("skipped 1 malformed line"));
    let turnaround: f64 = line_with(&text, "average turnaround")
        .split_whitespace()
        .last()
        .unwrap()
        .parse()
        .unwrap();
    assert!(turnaround > 0.0);
}

#[test]
fn real_traces_when_present() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/swf");
    let sdsc = data.join("SDSC-SP2-1998-4.2-cln.swf.gz");
    let wagap = data.join("metacentrum/wagap-2013.swf");
    if !sdsc.exists() || !wagap.exists() {
        println!("skipped: reads ../shared/data/swf (SDSC-SP2, wagap-2013), not present here");
        return;
    }
    let text = stdout(&simulate_alloc(
        &sdsc,
        &["--allocator", "ff", "--limit", "2000"],
    ));
    assert!(text.contains("trace: 59715 records"), "{text}");
    assert!(
        text.contains("5671 never ran") && text.contains("4134 ran past their request"),
        "{text}"
    );
    let machines = data.join("metacentrum/wagap-2013.swf.machines");
    let text = stdout(&research(&[
        "simulate",
        "fairshare",
        "--swf",
        wagap.to_str().unwrap(),
        "--machines",
        machines.to_str().unwrap(),
    ]));
    assert!(text.contains("17900 records"), "{text}");
    assert!(
        line_with(&text, "jobs with a higher penalty").contains(" of "),
        "{text}"
    );
}
