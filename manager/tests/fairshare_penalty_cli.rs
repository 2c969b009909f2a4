//! End-to-end checks of `hetpilot fairshare penalty` through the real binary: the paper's
//! Examples 3-5 (shipped fixtures) and bad input named in the error.

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

/// `hetpilot fairshare penalty` for one job of `cpus` and `mem` on the `machines` file.
fn penalty(machines: &Path, cpus: &str, mem: &str) -> Output {
    let machines = machines.to_str().expect("a UTF-8 path");
    hetpilot(&[
        "fairshare",
        "penalty",
        "--machines",
        machines,
        "--cpus",
        cpus,
        "--mem",
        mem,
    ])
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

/// Asserts that `out` shows the system-wide penalty `pe` and the multi-resource one `p`.
fn assert_penalties(out: &str, pe: &str, p: &str) {
    let system_wide = line_with(out, "PE(j) system-wide");
    assert!(system_wide.contains(&format!("= {pe} ")), "{out}");
    let multi_resource = line_with(out, "P(j) multi-resource");
    assert!(multi_resource.ends_with(&format!("= {p}")), "{out}");
}

#[test]
fn penalty_reproduces_examples_3_to_5() {
    for platform in ["examples-3-5.toml", "examples-3-5.machines"] {
        let p = fixture(platform);
        let ex3 = stdout(&penalty(&p, "1", "512GB"));
        assert_penalties(&ex3, "121.9", "80");
        let ex4 = stdout(&penalty(&p, "80", "80GB"));
        assert_penalties(&ex4, "80", "80");
        let ex5 = stdout(&penalty(&p, "1", "16GB"));
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
    let out = penalty(&zero, "1", "1MB");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2: machine \"broken\" has 0 RAM per node"),
        "{err}"
    );

    let p = fixture("examples-3-5.toml");
    let out = penalty(&p, "1", "1TB");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no suitable machine"));
}
