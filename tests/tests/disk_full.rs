//! A manager whose data directory's disk fills (a 16 MiB tmpfs, filled with a ballast
//! file while tasks run): new work is refused with 507 naming the directory (a file
//! upload with 507 too), with one WARN in the log; reads still answer; the results of the
//! running tasks are not lost; and once the ballast is removed the manager takes work
//! again without a restart, every task ending exactly once. Mounting the tmpfs needs
//! root: elsewhere the test says it skipped.

use hetpilot_e2e::tmpfs::Tmpfs;
use hetpilot_e2e::{array_app, bin, free_port, wait_until, Agent, Manager};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const FULL_WARNING: &str = "the data directory is full";

/// A manager serving `data_dir`, logging to `log` (outside the data directory, whose
/// disk fills).
fn manager(data_dir: &Path, log: &Path) -> Manager {
    let port = free_port();
    let child = Command::new(bin("hetpilot"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("HETPILOT_CONFIG")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("starting hetpilot serve");
    let url = wait_until("the manager to listen", Duration::from_secs(30), || {
        std::fs::read_to_string(data_dir.join("manager.url"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    });
    let admin = std::fs::read_to_string(data_dir.join("admin.token"))
        .unwrap()
        .trim()
        .to_string();
    Manager {
        child,
        dir: data_dir.to_path_buf(),
        url,
        port,
        admin,
    }
}

fn metric(m: &Manager, name: &str) -> Option<String> {
    let text = reqwest::blocking::Client::new()
        .get(format!("{}/metrics", m.url))
        .bearer_auth(&m.admin)
        .send()
        .ok()?
        .text()
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_string))
}

/// Tasks of `app` the store records as done (state 3).
fn stored_done(m: &Manager, app: u64) -> i64 {
    m.db()
        .query_row(
            "SELECT COUNT(*) FROM tasks WHERE app_id = ?1 AND state = 3",
            [app as i64],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn a_full_data_directory_refuses_new_work_loses_no_result_and_resumes_when_space_returns() {
    let root = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(&root.path().join("data"), 16 << 20) else {
        return;
    };
    let log = root.path().join("manager.log");
    let m = manager(&disk.path, &log);
    let gate = root.path().join("gate");
    let cmd = format!(
        "sh -c 'while [ ! -e {} ]; do sleep 0.05; done'",
        gate.display()
    );
    let held = m.submit(array_app("held", &cmd, 8));
    let a = Agent::start(
        &m.url,
        "local",
        &m.agent_token("local"),
        4,
        &root.path().join("agent"),
        &[],
    );
    let http = m.http();
    wait_until("4 tasks to run", Duration::from_secs(60), || {
        let (_, s) = http.get(&format!("/v1/apps/{held}"), &m.admin);
        (s["counts"]["running"] == 4).then_some(())
    });

    let ballast = disk.fill("ballast");
    let (status, body) = http.post("/v1/apps", &m.admin, &array_app("more", "true", 200));
    assert_eq!(status, 507, "{body}");
    let message = body["error"].as_str().unwrap();
    assert!(
        message.contains(&disk.path.display().to_string()),
        "{message}"
    );
    assert!(message.contains("free some space"), "{message}");
    assert_eq!(metric(&m, "hetpilot_data_dir_full").as_deref(), Some("1"));
    let upload = reqwest::blocking::Client::new()
        .put(format!("{}/v1/files/while-full.bin", m.url))
        .bearer_auth(&m.admin)
        .body(vec![1u8; 256 << 10])
        .send()
        .unwrap();
    assert_eq!(upload.status().as_u16(), 507, "{:?}", upload.text());
    // Reads still answer.
    let (status, summary) = http.get(&format!("/v1/apps/{held}"), &m.admin);
    assert_eq!(status, 200, "{summary}");
    let out = m.cli(&["status"]);
    assert!(out.status.success(), "{out:?}");

    // The running tasks end; their results cannot be stored, so the agent keeps them.
    std::fs::write(&gate, b"").unwrap();
    wait_until("a report refused with 507", Duration::from_secs(60), || {
        a.log().contains("507").then_some(())
    });
    assert_eq!(stored_done(&m, held), 0, "nothing was stored while full");

    std::fs::remove_file(&ballast).unwrap();
    m.wait_finished(held, Duration::from_secs(120));
    let more = m.submit(array_app("more", "true", 200));
    m.wait_finished(more, Duration::from_secs(120));
    assert_eq!(metric(&m, "hetpilot_data_dir_full").as_deref(), Some("0"));

    // Every task ended exactly once: one run each, a success.
    let db = m.db();
    let runs: Vec<(i64, i64)> = db
        .prepare("SELECT idx, COUNT(*) FROM attempts WHERE app_id = ?1 AND outcome IS NOT NULL GROUP BY idx")
        .unwrap()
        .query_map([held as i64], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(runs, (0..8).map(|i| (i, 1)).collect::<Vec<_>>());
    assert_eq!(stored_done(&m, held), 8);
    let agent_log = a.log();
    assert!(!agent_log.contains("dropped"), "{agent_log}");
    let manager_log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        manager_log.matches(FULL_WARNING).count(),
        1,
        "one warning, not one a request: {manager_log}"
    );
    assert!(manager_log.contains("has room again"), "{manager_log}");
}
