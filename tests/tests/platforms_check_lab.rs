//! `hetpilot platforms check` against the local lab (`deploy/lab/start.sh`): for the
//! lab-ssh profile (login 127.0.0.1:2222, agents on localhost:2222) it reports each host's
//! key as listed, unknown (with its fingerprint and the command that adds it) or changed,
//! and fails the platform unless every key is listed. It asks Slurm and the PBS wrapper
//! about each profile's partition or queue, failing a typo'd queue and more cores than
//! the nodes have, and `--probe` runs the agent binary in a real job.

use hetpilot_e2e::bin;
use hetpilot_e2e::lab::{self, configure};
use std::path::Path;
use std::process::Command;

/// Runs `hetpilot platforms check` on the lab-ssh profile with host keys checked against
/// `known_hosts`; returns whether it passed and what it printed.
fn check(known_hosts: &Path) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let profile = lab::shipped_profile("lab-ssh");
    let env = configure(dir.path(), &[("lab-ssh", &profile)], "");
    let out = Command::new(bin("hetpilot"))
        .args(["platforms", "check"])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("HETPILOT_LAB_KNOWN_HOSTS", known_hosts)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn platforms_check_reports_each_ssh_hosts_key_as_listed_unknown_or_changed() {
    let _lab = lab::require();
    let (passed, out) = check(&lab::known_hosts());
    assert!(passed, "{out}");
    for host in ["127.0.0.1", "localhost"] {
        let line = format!("ok   host key of {host}:2222: ED25519 key SHA256:");
        assert!(out.contains(&line), "{line:?} not in {out}");
    }

    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let (passed, out) = check(&empty);
    assert!(!passed, "{out}");
    for host in ["127.0.0.1", "localhost"] {
        let line = format!("FAIL host key: {host}:2222 is not a known host");
        assert!(out.contains(&line), "{line:?} not in {out}");
        let add = format!(
            "ssh-keyscan -p 2222 -t ed25519 {host} >> {}",
            empty.display()
        );
        assert!(out.contains(&add), "{add:?} not in {out}");
    }
    assert!(
        !out.contains("login reachable"),
        "no login after a refused key: {out}"
    );

    let client = std::fs::read_to_string(lab::lab_dir().join("ssh/id_ed25519.pub")).unwrap();
    let other_key = client.split_whitespace().nth(1).unwrap();
    let changed = dir.path().join("changed");
    std::fs::write(
        &changed,
        format!(
            "[127.0.0.1]:2222 ssh-ed25519 {other_key}\n[localhost]:2222 ssh-ed25519 {other_key}\n"
        ),
    )
    .unwrap();
    let (passed, out) = check(&changed);
    assert!(!passed, "{out}");
    assert!(
        out.contains("FAIL host key: 127.0.0.1:2222: its host key differs"),
        "{out}"
    );
}

/// A copy of shipped profile `from` named `name`, with `(from, to)` replacements.
fn variant(dir: &Path, from: &str, name: &str, edits: &[(&str, &str)]) -> std::path::PathBuf {
    let mut text = std::fs::read_to_string(lab::shipped_profile(from))
        .unwrap()
        .replace(&format!("name = \"{from}\""), &format!("name = \"{name}\""));
    for (a, b) in edits {
        assert!(text.contains(a), "{a} not in {from}");
        text = text.replace(a, b);
    }
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `hetpilot platforms check ARGS` on `platforms`; whether it passed and its output.
fn check_platforms(dir: &Path, platforms: &[(&str, &Path)], args: &[&str]) -> (bool, String) {
    let env = configure(dir, platforms, "");
    let out = Command::new(bin("hetpilot"))
        .args(["platforms", "check"])
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// The lines `platforms check` printed for platform `name`.
fn section<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .skip_while(|l| !l.starts_with(&format!("{name} (")))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect()
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn platforms_check_asks_slurm_and_pbs_about_partitions_queues_and_cores() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let typo = variant(
        dir.path(),
        "lab-debug",
        "lab-typo",
        &[("queue = \"debug\"", "queue = \"smal\"")],
    );
    let pbs_typo = variant(
        dir.path(),
        "lab-pbs",
        "lab-pbs-typo",
        &[("queue = \"debug\"", "queue = \"smal\"")],
    );
    let wide = variant(
        dir.path(),
        "lab-small",
        "lab-wide",
        &[("cores_per_node = 2", "cores_per_node = 4")],
    );
    let debug = lab::shipped_profile("lab-debug");
    let torque = lab::shipped_profile("lab-torque");
    let (passed, out) = check_platforms(
        dir.path(),
        &[
            ("lab-typo", &typo),
            ("lab-pbs-typo", &pbs_typo),
            ("lab-wide", &wide),
            ("lab-debug", &debug),
            ("lab-torque", &torque),
        ],
        &[],
    );
    assert!(!passed, "{out}");
    assert!(
        out.contains("3 of 5 platforms failed their checks"),
        "{out}"
    );
    let fails = |name: &str| -> Vec<String> {
        section(&out, name)
            .iter()
            .filter_map(|l| l.strip_prefix("  FAIL "))
            .map(String::from)
            .collect()
    };
    assert_eq!(
        fails("lab-typo"),
        ["partition `smal` does not exist (partitions: big, debug, gpu, small)"],
        "{out}"
    );
    assert_eq!(
        fails("lab-pbs-typo"),
        ["queue `smal` does not exist (queues: big, debug, gpu, small)"],
        "{out}"
    );
    assert_eq!(
        fails("lab-wide"),
        ["the nodes of partition `small` have at most 2 CPUs; pilots ask for 4 (cores_per_node)"],
        "{out}"
    );
    let debug_lines = section(&out, "lab-debug").join("\n");
    assert!(fails("lab-debug").is_empty(), "{out}");
    assert!(
        debug_lines.contains("ok   sbatch --test-only: sbatch: Job ")
            && debug_lines.contains("in partition debug"),
        "{debug_lines}"
    );
    assert!(debug_lines.contains("ok   agent binary "), "{debug_lines}");
    assert!(fails("lab-torque").is_empty(), "{out}");
    assert!(
        section(&out, "lab-torque")
            .contains(&"  ok   queue `small`: Execution, enabled and started, walltime no limit"),
        "{out}"
    );
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn platforms_check_probe_runs_the_agent_binary_in_a_real_job() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let debug = lab::shipped_profile("lab-debug");
    let (passed, out) = check_platforms(dir.path(), &[("lab-debug", &debug)], &["--probe"]);
    assert!(passed, "{out}");
    assert!(
        out.contains("  ok   probe job: the agent binary runs on a compute node: hetpilot-agent "),
        "{out}"
    );

    let broken = variant(
        dir.path(),
        "lab-debug",
        "lab-nobinary",
        &[("${HETPILOT_AGENT_BINARY}", "/nonexistent/hetpilot-agent")],
    );
    let (passed, out) = check_platforms(dir.path(), &[("lab-nobinary", &broken)], &[]);
    assert!(!passed, "{out}");
    assert!(
        out.contains(
            "  FAIL agent binary /nonexistent/hetpilot-agent does not run on the login side"
        ),
        "{out}"
    );
    let (passed, out) = check_platforms(dir.path(), &[("lab-nobinary", &broken)], &["--probe"]);
    assert!(!passed, "{out}");
    let probe = out
        .lines()
        .find(|l| l.starts_with("  FAIL probe job: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        probe.contains("exit 127")
            && probe.contains("/nonexistent/hetpilot-agent is missing or not executable"),
        "{out}"
    );
}
