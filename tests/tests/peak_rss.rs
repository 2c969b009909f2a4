//! A task's peak RSS is its own: the agent starts tasks through its spawn helper (a small
//! process of its own; see `agent/src/spawner.rs`), so `/bin/true` reports well under the
//! agent's size while a program that allocates 200 MiB reports at least that, and the
//! helper, not the agent, is what the tasks' pre-exec address space was. Tasks started
//! through the helper inherit no descriptor but their stdin, stdout and stderr.

use hetpilot_e2e::{array_app, bin, Manager};
use serde_json::json;
use std::time::Duration;

/// A `/proc/PID/status` figure in KiB (`VmHWM:`, `VmRSS:`).
fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The pids of `parent`'s children named `comm`.
fn children(parent: u32, comm: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((name, rest)) = stat.split_once(") ") else {
                return false;
            };
            let ppid = rest
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u32>().ok());
            name.ends_with(&format!("({comm}")) && ppid == Some(parent)
        })
        .collect()
}

#[test]
fn a_tasks_peak_rss_is_its_own_not_the_agents() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let agent = m.agent("local", 1, &[]);
    let small = m.submit(array_app("true", "/bin/true", 3));
    let hp_mem = bin("hp-mem");
    assert!(
        hp_mem.exists(),
        "{} missing: cargo build --workspace --bins",
        hp_mem.display()
    );
    let big = m.submit(json!({
        "name": "mem",
        "command": format!("{} 200 1", hp_mem.display()),
        "tasks": {"array": {"start": 0, "end": 0}},
    }));
    m.wait_finished(small, Duration::from_secs(120));
    m.wait_finished(big, Duration::from_secs(120));
    let peak = |app: u64| -> (u64, u64) {
        m.db()
            .query_row(
                "SELECT MIN(max_rss_kb), MAX(max_rss_kb) FROM attempts WHERE app_id = ?1 \
                 AND outcome = 'success'",
                [app as i64],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .unwrap()
    };
    let agent_pid = agent.child.id();
    let agent_peak = status_kib(agent_pid, "VmHWM:");
    let (_, true_max) = peak(small);
    let (mem_min, _) = peak(big);
    let helpers = children(agent_pid, "hetpilot-spawn");
    let helper_peaks: Vec<u64> = helpers.iter().map(|h| status_kib(*h, "VmHWM:")).collect();
    println!(
        "agent VmHWM {agent_peak} KiB; spawn helper VmHWM {helper_peaks:?} KiB; /bin/true peak \
         {true_max} KiB; hp-mem 200 peak {mem_min} KiB"
    );
    assert!(
        true_max * 2 < agent_peak,
        "/bin/true reports {true_max} KiB, the agent's peak is {agent_peak} KiB"
    );
    assert!(mem_min >= 200 * 1024, "hp-mem 200 reports {mem_min} KiB");
    // The helper is the agent's child, and small.
    assert_eq!(helpers.len(), 1, "one spawn helper: {helpers:?}");
    let helper_peak = helper_peaks[0];
    assert!(
        helper_peak >= true_max.saturating_sub(1024) && helper_peak * 2 < agent_peak,
        "helper {helper_peak} KiB, /bin/true {true_max} KiB, agent {agent_peak} KiB"
    );
}

#[test]
fn tasks_inherit_only_their_standard_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let _agent = m.agent("local", 1, &[]);
    let app = m.submit(json!({
        "name": "fds",
        // ls lists its own descriptors: 0-2, and 3 for the directory it reads.
        "command": "ls /proc/self/fd",
        "tasks": {"array": {"start": 0, "end": 0}},
    }));
    m.wait_finished(app, Duration::from_secs(60));
    let stdout: String = m
        .db()
        .query_row(
            "SELECT stdout_path FROM attempts WHERE app_id = ?1",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap();
    let fds = std::fs::read_to_string(&stdout).unwrap();
    assert_eq!(
        fds.split_whitespace().collect::<Vec<_>>(),
        ["0", "1", "2", "3"],
        "{fds:?}"
    );
}
