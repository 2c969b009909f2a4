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
}
