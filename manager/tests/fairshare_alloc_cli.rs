//! End-to-end checks of the issue-6 commands through the real `hetpilot` binary:
//! `fairshare penalty` on the paper's Examples 3-5 (shipped fixtures), bad input, and
//! `simulate alloc` / `simulate fairshare` on small shipped traces. The last test reads
//! ../shared/data (the real SDSC-SP2 and wagap traces) and skips when they are absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn hetpilot(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetpilot"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("hetpilot runs")
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
fn penalty_reproduces_examples_3_to_5() {
    for platform in ["examples-3-5.toml", "examples-3-5.machines"] {
        let p = fixture(platform);
        let p = p.to_str().unwrap();
        let ex3 = stdout(&hetpilot(&[
            "fairshare",
            "penalty",
            "--machines",
            p,
            "--cpus",
            "1",
            "--mem",
            "512GB",
        ]));
        assert!(
            line_with(&ex3, "PE(j) system-wide").contains("= 121.9 "),
            "{ex3}"
        );
        assert!(
            line_with(&ex3, "P(j) multi-resource").ends_with("= 80"),
            "{ex3}"
        );
        let ex4 = stdout(&hetpilot(&[
            "fairshare",
            "penalty",
            "--machines",
            p,
            "--cpus",
            "80",
            "--mem",
            "80GB",
        ]));
        assert!(
            line_with(&ex4, "PE(j) system-wide").contains("= 80 "),
            "{ex4}"
        );
        assert!(
            line_with(&ex4, "P(j) multi-resource").ends_with("= 80"),
            "{ex4}"
        );
        let ex5 = stdout(&hetpilot(&[
            "fairshare",
            "penalty",
            "--machines",
            p,
            "--cpus",
            "1",
            "--mem",
            "16GB",
        ]));
        assert!(line_with(&ex5, "type1").trim_end().ends_with(" 8"), "{ex5}");
        assert!(
            line_with(&ex5, "type2").trim_end().ends_with(" 2.5"),
            "{ex5}"
        );
        assert!(
            line_with(&ex5, "P(j) multi-resource").ends_with("= 2.5"),
            "{ex5}"
        );
    }
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("zero.machines");
    std::fs::write(&zero, "0\tok\t2\t8\t1\t1000\n1\tbroken\t2\t8\t1\t0\n").unwrap();
    let out = hetpilot(&[
        "fairshare",
        "penalty",
        "--machines",
        zero.to_str().unwrap(),
        "--cpus",
        "1",
        "--mem",
        "1MB",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2: machine \"broken\" has 0 RAM per node"),
        "{err}"
    );

    let p = fixture("examples-3-5.toml");
    let out = hetpilot(&[
        "fairshare",
        "penalty",
        "--machines",
        p.to_str().unwrap(),
        "--cpus",
        "1",
        "--mem",
        "1TB",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no suitable machine"));

    let swf = fixture("small.swf");
    let out = hetpilot(&[
        "simulate",
        "alloc",
        "--swf",
        swf.to_str().unwrap(),
        "--clusters",
        "",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cluster list is empty"));
    let out = hetpilot(&[
        "simulate",
        "alloc",
        "--swf",
        swf.to_str().unwrap(),
        "--clusters",
        "2,4",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs 8 processors but the largest cluster has 4"),
        "{err}"
    );
    let out = hetpilot(&[
        "simulate",
        "alloc",
        "--swf",
        swf.to_str().unwrap(),
        "--strict",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 8"),
        "strict mode names the malformed line"
    );
}

#[test]
fn simulate_alloc_reports_metrics_and_skipped_lines() {
    let swf = fixture("small.swf");
    let out = hetpilot(&[
        "simulate",
        "alloc",
        "--swf",
        swf.to_str().unwrap(),
        "--clusters",
        "8,16",
        "--allocator",
        "tlpa",
        "--depth",
        "4",
        "--load",
        "0.6",
    ]);
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
    let text = stdout(&hetpilot(&[
        "simulate",
        "alloc",
        "--swf",
        sdsc.to_str().unwrap(),
        "--allocator",
        "ff",
        "--limit",
        "2000",
    ]));
    assert!(text.contains("trace: 59715 records"), "{text}");
    assert!(
        text.contains("5671 never ran") && text.contains("4134 ran past their request"),
        "{text}"
    );
    let machines = data.join("metacentrum/wagap-2013.swf.machines");
    let text = stdout(&hetpilot(&[
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
