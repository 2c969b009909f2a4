//! GPUs on the agent with a fake `nvidia-smi` on `PATH` (as the batch tests put fake
//! `qsub`s there): what the agent offers, kept to the batch job's grant, checked against
//! nvidia-smi; and, with the manager's GPU leasing, tasks bound to their own devices.

use hetpilot_e2e::gpu_tasks::{
    devices, fake_nvidia_smi, path_with, report_dir, reports, tasks_per_device, together,
    two_gpu_agent, UUID_A, UUID_B,
};
use hetpilot_e2e::{bin, wait_until, Manager};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

/// `hetpilot-agent gpus ARGS` with the fake nvidia-smi first on PATH and `env` set (the
/// batch variables removed otherwise).
fn agent_gpus(fake: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(bin("hetpilot-agent"));
    cmd.arg("gpus").args(args).env("PATH", path_with(fake));
    for v in [
        "CUDA_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "SLURM_JOB_GPUS",
        "SLURM_STEP_GPUS",
        "PBS_GPUFILE",
    ] {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied()).output().unwrap()
}

fn offered(fake: &Path, env: &[(&str, &str)]) -> Value {
    let out = agent_gpus(fake, &["--json"], env);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn uuids(v: &Value) -> Vec<String> {
    v["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["uuid"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_agent_offers_what_a_fake_nvidia_smi_lists_within_the_jobs_grant() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_nvidia_smi(dir.path(), 81920);
    let all = offered(&fake, &[]);
    // These machines have no NVIDIA driver, so NVML is absent and nvidia-smi answers.
    assert_eq!(all["source"], "nvidia-smi", "{all}");
    assert_eq!(uuids(&all), [UUID_A, UUID_B]);
    assert_eq!(all["gpus"][1]["index"], 1);
    assert_eq!(all["gpus"][1]["model"], "NVIDIA A100-SXM4-80GB");
    assert_eq!(all["gpus"][1]["memory_mib"], 81920);
    assert_eq!(all["gpus"][1]["vendor"], "nvidia");
    assert_eq!(all["gpus"][1]["nodes"][0], "/dev/nvidia1");

    let by_uuid = offered(&fake, &[("CUDA_VISIBLE_DEVICES", UUID_B)]);
    assert_eq!(uuids(&by_uuid), [UUID_B]);
    assert_eq!(by_uuid["granted_by"][0], "CUDA_VISIBLE_DEVICES");
    let by_slurm = offered(
        &fake,
        &[("SLURM_JOB_GPUS", "0"), ("CUDA_VISIBLE_DEVICES", "0")],
    );
    assert_eq!(uuids(&by_slurm), [UUID_A]);
    let none = offered(&fake, &[("CUDA_VISIBLE_DEVICES", "")]);
    assert_eq!(uuids(&none), Vec::<String>::new());

    let lines = agent_gpus(&fake, &[], &[]);
    assert_eq!(
        String::from_utf8_lossy(&lines.stdout),
        format!(
            "0 {UUID_A} nvidia /dev/nvidia0 81920 NVIDIA A100-SXM4-80GB\n\
             1 {UUID_B} nvidia /dev/nvidia1 81920 NVIDIA A100-SXM4-80GB\n"
        )
    );
}

#[test]
fn the_check_against_nvidia_smi_fails_on_a_difference() {
    let dir = tempfile::tempdir().unwrap();
    let same = fake_nvidia_smi(dir.path(), 81920);
    let ok = agent_gpus(&same, &["--check-nvidia-smi"], &[]);
    assert!(ok.status.success(), "{ok:?}");
    assert!(String::from_utf8_lossy(&ok.stderr).contains("match nvidia-smi"));

    let other = tempfile::tempdir().unwrap();
    let differs = fake_nvidia_smi(other.path(), 40960);
    let bad = agent_gpus(&differs, &["--check-nvidia-smi"], &[]);
    assert!(!bad.status.success(), "{bad:?}");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains(&format!(
            "{UUID_A}: the agent says 81920 MiB, nvidia-smi 40960 MiB"
        )),
        "{err}"
    );
}

/// The real-GPU check script, rehearsed here against the fake nvidia-smi: its plumbing (the
/// CLI's flags, the `agents` table's columns, the task output files it reads) keeps up with
/// the code, so a machine with a GPU finds it working.
#[test]
fn the_real_gpu_check_passes_its_rehearsal_on_a_fake_nvidia_smi() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_nvidia_smi(dir.path(), 81920);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/gpu-check.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .arg("--rehearse")
        .arg(bin("hetpilot"))
        .arg(bin("hetpilot-agent"))
        .env("PATH", path_with(&fake))
        .env("TMPDIR", dir.path())
        .env_remove("HETPILOT_URL")
        .env_remove("HETPILOT_TOKEN");
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict = stdout.lines().last().unwrap_or_default();
    assert!(
        verdict.starts_with("GPU CHECK REHEARSAL PASS: 2 GPU(s)"),
        "{stdout}"
    );
    assert!(stdout.contains("4 gpus=0.5 tasks ran together"), "{stdout}");
}

/// `hetpilot agents --json`, as admin.
fn agents(m: &Manager) -> Vec<Value> {
    let out = m.cli(&["agents", "--json"]);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of the sample `line_start` (name and labels) in `/metrics`, read as admin.
fn metric(m: &Manager, line_start: &str) -> Option<f64> {
    let resp = reqwest::blocking::Client::new()
        .get(format!("{}/metrics", m.url))
        .bearer_auth(&m.admin)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let text = resp.text().unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(line_start))
        .and_then(|v| v.trim().parse().ok())
}

/// Stops an agent this test started and waits for it.
fn stop(mut agent: Child) {
    let _ = agent.kill();
    wait_until("the agent to stop", Duration::from_secs(10), || {
        agent.try_wait().ok().flatten()
    });
}

/// `hetpilot ARGS` as admin, which must succeed; its stdout.
fn cli_ok(m: &Manager, args: &[&str]) -> String {
    let out = m.cli(args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `hetpilot tasks` (the table and `--json`) and `hetpilot logs` say which devices, or
/// which share of one, each run was granted.
#[test]
fn tasks_and_logs_show_the_gpus_each_run_was_granted() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let agent = two_gpu_agent(&m, dir.path());
    wait_until("the agent to register", Duration::from_secs(20), || {
        agents(&m).first().map(|_| ())
    });
    for gpus in ["2", "0.5"] {
        cli_ok(
            &m,
            &[
                "submit", "--wait", "--array", "0-0", "--gpus", gpus, "--", "true",
            ],
        );
    }

    let listed: Value = serde_json::from_str(&cli_ok(&m, &["tasks", "1", "--json"])).unwrap();
    let granted = &listed[0]["last"]["resources"]["gpus"];
    let indices: Vec<u64> = granted
        .as_array()
        .unwrap_or_else(|| panic!("no grant in {listed}"))
        .iter()
        .map(|g| g["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices, [0, 1], "{listed}");
    assert_eq!(granted[1]["uuid"], UUID_B, "{listed}");
    let table = cli_ok(&m, &["tasks", "1"]);
    assert!(
        table.lines().next().unwrap().ends_with("GRANTED"),
        "{table}"
    );
    assert!(
        table.lines().nth(1).unwrap().ends_with("gpus 0,1"),
        "{table}"
    );
    let logs = cli_ok(&m, &["logs", "1.0"]);
    assert!(logs.contains(" with gpus 0,1: Success"), "{logs}");

    let listed: Value = serde_json::from_str(&cli_ok(&m, &["tasks", "2", "--json"])).unwrap();
    let share = &listed[0]["last"]["resources"]["gpus"][0];
    assert_eq!(share["amount"], 0.5, "{listed}");
    let device = share["index"].as_u64().unwrap();
    let table = cli_ok(&m, &["tasks", "2"]);
    assert!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .ends_with(&format!("gpus {device} (0.5)")),
        "{table}"
    );
    let logs = cli_ok(&m, &["logs", "2.0"]);
    assert!(
        logs.contains(&format!("with gpus {device} (0.5): Success")),
        "{logs}"
    );
    stop(agent);
}

/// The manager leases each task its devices (or a share of one) from the agent's
/// registered GPUs, and the agent binds the task to them.
#[test]
fn gpu_tasks_on_a_two_gpu_agent_get_their_own_devices_or_share_them_two_by_two() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path(), 30.0);
    let agent = two_gpu_agent(&m, dir.path());

    // The agent registers both devices, none in use.
    let gpus = wait_until("the agent to register", Duration::from_secs(20), || {
        agents(&m).first().map(|a| a["gpus"].clone())
    });
    assert_eq!(gpus.as_array().map(Vec::len), Some(2), "{gpus}");
    assert_eq!(gpus[1]["uuid"], UUID_B, "{gpus}");
    assert_eq!(gpus[1]["model"], "NVIDIA A100-SXM4-80GB", "{gpus}");
    assert_eq!(gpus[1]["memory_mib"], 81920, "{gpus}");
    assert_eq!(gpus[1]["in_use"], 0.0, "{gpus}");

    // Two whole-GPU tasks, running at the same time, see different devices.
    let whole = report_dir(dir.path(), "whole", true);
    let out = m.cli(&[
        "submit",
        "--wait",
        "--gpus",
        "1",
        "--array",
        "0-1",
        "--",
        "sh",
        "-c",
        &together(&whole, 2),
    ]);
    assert!(out.status.success(), "{out:?}");
    let r = reports(&whole, 2);
    assert_eq!(
        tasks_per_device(&r, "1", 2),
        devices(&[(UUID_A, 1), (UUID_B, 1)]),
        "each task sees exactly its own device"
    );

    // Four half-GPU tasks share the two devices two by two; while they run, the agents
    // list and the metrics show both devices taken.
    let half = report_dir(dir.path(), "half", false);
    let out = m.cli(&[
        "submit",
        "--json",
        "--gpus",
        "0.5",
        "--array",
        "0-3",
        "--",
        "sh",
        "-c",
        &together(&half, 4),
    ]);
    assert!(out.status.success(), "{out:?}");
    let app = serde_json::from_slice::<Value>(&out.stdout).unwrap()["app"]
        .as_u64()
        .unwrap();
    wait_until(
        "four half-GPU tasks to start",
        Duration::from_secs(30),
        || {
            let started = std::fs::read_dir(&half)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().extension() == Some("started".as_ref()))
                .count();
            (started == 4).then_some(())
        },
    );
    let held = agents(&m)[0]["gpus"].clone();
    for g in held.as_array().unwrap() {
        assert_eq!(
            (g["in_use"].as_f64(), g["tasks"].as_u64()),
            (Some(1.0), Some(2)),
            "{held}"
        );
    }
    let table = String::from_utf8(m.cli(&["agents"]).stdout).unwrap();
    assert!(table.contains("2 (2 in use)"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.contains(UUID_B) && l.contains("NVIDIA A100-SXM4-80GB")),
        "{table}"
    );
    let labels = "{platform=\"local\",resource=\"gpus\"}";
    assert_eq!(
        metric(&m, &format!("hetpilot_agent_resources_used{labels}")),
        Some(2.0)
    );
    assert_eq!(
        metric(&m, &format!("hetpilot_agent_resources_free{labels}")),
        Some(0.0)
    );
    std::fs::write(half.join("release"), "").unwrap();
    let summary = m.wait_finished(app, Duration::from_secs(30));
    assert_eq!(summary["counts"]["done"], 4, "{summary}");
    let r = reports(&half, 4);
    assert_eq!(
        tasks_per_device(&r, "0.5", 4),
        devices(&[(UUID_A, 2), (UUID_B, 2)])
    );
    assert_eq!(
        metric(&m, &format!("hetpilot_agent_resources_free{labels}")),
        Some(2.0)
    );

    // A CPU-only task on the same agent sees no GPU.
    let cpu = report_dir(dir.path(), "cpu", true);
    let out = m.cli(&[
        "submit",
        "--wait",
        "--array",
        "0-0",
        "--",
        "sh",
        "-c",
        &together(&cpu, 1),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(reports(&cpu, 1)[0].0, "-", "CUDA_VISIBLE_DEVICES is empty");
    stop(agent);
}
