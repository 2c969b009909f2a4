//! `hetpilot-research reproduce --quick --check`: every committed quick table and figure
//! under `docs/reproduction/*/quick/` must equal what the code produces now, so the
//! reproduction documents cannot drift from the code. Experiments whose trace is absent
//! (`../shared/data`) are skipped and say so; the rest run in seconds. The experiments run
//! `hetpilot-research` and, for the product's own commands (`affinity`), `hetpilot`.

use hetpilot_e2e::bin;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn reproduce(args: &[&str]) -> (bool, String) {
    let out = Command::new(bin("hetpilot-research"))
        .current_dir(repo())
        .arg("reproduce")
        .args(args)
        .output()
        .expect("hetpilot-research runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn committed_quick_tables_match_the_code() {
    let (ok, text) = reproduce(&["--quick", "--check"]);
    assert!(
        ok,
        "drift between docs/reproduction/*/quick and the code:\n{text}"
    );
    let compared: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("checked ")?.split(' ').next()?.parse().ok())
        .expect("a summary line");
    // staging, two-level and ptg need no trace: at least their files are compared.
    assert!(compared >= 50, "only {compared} files compared:\n{text}");
}

#[test]
fn a_changed_committed_file_is_reported_as_drift() {
    let docs = tempfile::tempdir().unwrap();
    let quick = docs.path().join("ptg/quick");
    std::fs::create_dir_all(&quick).unwrap();
    let committed = repo().join("docs/reproduction/ptg/quick");
    for entry in std::fs::read_dir(&committed).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, quick.join(path.file_name().unwrap())).unwrap();
    }
    let report = quick.join("report.md");
    let text = std::fs::read_to_string(&report).unwrap();
    std::fs::write(&report, text.replacen("SELFISH", "SELFISH ", 1)).unwrap();
    let docs_arg = docs.path().to_str().unwrap();
    let (ok, out) = reproduce(&["--quick", "--check", "--paper", "ptg", "--docs", docs_arg]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("DRIFT ptg/suite") && out.contains("report.md differs"),
        "{out}"
    );
}
