//! What reading a workflow costs `hetpilot submit`: a large WfCommons instance is read in
//! memory proportionate to it (no tree of the whole file), a file past the bound the
//! manager's submit limit sets is refused before it is read, and an application past that
//! limit is refused before anything is sent. No manager runs: the CLI is pointed at a port
//! nothing listens on, so a command that gets as far as sending says it cannot reach it.

use hetpilot_e2e::proc_stats::run_with_peak_rss;
use hetpilot_e2e::{bin, free_port};
use std::path::Path;
use std::process::{Command, Output};

/// `hetpilot submit ARGS` against no manager, with no configuration or limit from the
/// environment: its output and peak RSS in KiB.
fn submit(args: &[&str]) -> (Output, u64) {
    let mut cmd = Command::new(bin("hetpilot"));
    cmd.arg("submit")
        .args(args)
        .env_remove("HETPILOT_CONFIG")
        .env_remove("HETPILOT_MAX_SUBMIT_MIB")
        .env("HETPILOT_URL", format!("http://127.0.0.1:{}", free_port()))
        .env("HETPILOT_TOKEN", "unused");
    run_with_peak_rss(&mut cmd)
}

/// A synthetic WfCommons 1.5 instance of `tasks` tasks (about 1.6 KB each) at `path`.
fn instance(path: &Path, tasks: usize) -> u64 {
    let generator = bin("hp-wfgen");
    assert!(
        generator.exists(),
        "{} missing: cargo build --workspace --bins",
        generator.display()
    );
    let out = Command::new(generator)
        .arg(tasks.to_string())
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::metadata(path).unwrap().len()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_large_wfcommons_instance_is_read_in_memory_proportionate_to_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.json");
    let size = instance(&path, 20_000);
    let (out, peak_kib) = submit(&["--wfcommons", path.to_str().unwrap()]);
    let err = stderr(&out);
    // It read the file, built the application and got as far as sending it.
    assert!(err.contains("cannot reach the manager"), "{err}");
    let (peak_mib, size_mib) = (peak_kib as f64 / 1024.0, size as f64 / 1048576.0);
    println!(
        "{size_mib:.1} MiB instance, 20000 tasks: peak RSS {peak_mib:.1} MiB ({:.2} × the file)",
        peak_mib / size_mib
    );
    // A tree of the whole file took almost 6 times the file; what is kept of it, and the
    // application's JSON, take well under that (2.5 times when this was written).
    assert!(
        peak_mib < 3.5 * size_mib,
        "peak RSS {peak_mib:.1} MiB for a {size_mib:.1} MiB instance"
    );
}

#[test]
fn a_workflow_file_past_its_bound_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("manager.toml");
    std::fs::write(&config, "[limits]\nmax_submit_mib = 1\n").unwrap();
    let config = config.to_str().unwrap();
    // (flag, file size in MiB, flags, what the refusal says)
    let cases: [(&str, u64, &[&str], &str); 4] = [
        (
            "--wfcommons",
            600,
            &[],
            "600 MiB is more than the 512 MiB a WfCommons instance may be (8 × the manager's \
             submit limit, the manager's default [limits] max_submit_mib = 64)",
        ),
        (
            "--wfcommons",
            9,
            &["--config", config],
            "more than the 8 MiB a WfCommons instance may be (8 × the manager's submit limit, \
             [limits] max_submit_mib = 1 of",
        ),
        (
            "--dax",
            5,
            &["--max-submit-mib", "1"],
            "5 MiB is more than the 4 MiB a DAX may be (4 × the manager's submit limit, \
             --max-submit-mib 1)",
        ),
        ("--dax", 300, &[], "more than the 256 MiB a DAX may be"),
    ];
    for (flag, mib, extra, says) in cases {
        // A sparse file: its size costs no disk, reading it would cost its size in memory.
        let path = dir.path().join(format!("big{mib}"));
        std::fs::File::create(&path)
            .unwrap()
            .set_len(mib << 20)
            .unwrap();
        let mut args = vec![flag, path.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (out, peak_kib) = submit(&args);
        let err = stderr(&out);
        assert!(!out.status.success(), "{flag} {mib} MiB: {out:?}");
        assert!(err.contains(says), "{flag} {mib} MiB: {err}");
        assert!(
            err.contains("--max-submit-mib"),
            "says how to raise it: {err}"
        );
        assert!(
            peak_kib < 64 << 10,
            "{flag} {mib} MiB: peak RSS {peak_kib} KiB: the file was read"
        );
    }
}

#[test]
fn an_application_past_the_submit_limit_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wf.json");
    // About 6 MiB of instance (under the 8 MiB bound of a 1 MiB limit), 1.5 MiB of JSON.
    instance(&path, 4_000);
    let (out, _) = submit(&[
        "--wfcommons",
        path.to_str().unwrap(),
        "--max-submit-mib",
        "1",
    ]);
    let err = stderr(&out);
    assert!(
        err.contains(
            "the application is 2 MiB of JSON, more than the manager's submit limit \
                      (--max-submit-mib 1)"
        ),
        "{err}"
    );
    assert!(!err.contains("cannot reach"), "{err}");
}
