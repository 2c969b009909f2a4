//! GPU pilots against the real local lab (`deploy/lab/start.sh`), whose partition `gpu`
//! is node n5 with two fake GPUs (device nodes that gres.conf names, and a fake
//! `nvidia-smi` that lab-gpu.toml puts on the pilot's PATH): a pilot there gets both from
//! Slurm (SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES) and registers them, its tasks are bound to
//! their own devices or share them; CPU-only work never makes the manager submit a pilot to
//! the GPU partition while a CPU partition can take it.

use hetpilot_e2e::gpu_tasks::{devices, report_dir, reports, tasks_per_device, together};
use hetpilot_e2e::lab::{self, configure, pilots, start_tls_manager};
use hetpilot_e2e::{array_app, wait_until, Manager};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The UUIDs the lab's fake `nvidia-smi` gives its two devices.
const LAB_GPU_0: &str = "GPU-1ab0d000-0000-4000-8000-000000000000";
const LAB_GPU_1: &str = "GPU-1ab0d000-0000-4000-8000-000000000001";

const FAST: &str = "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 2\nbackoff_max_secs = 30";

/// A manager whose one platform is the lab's GPU partition, holding the lab; its fields
/// drop in order: the manager, its pilots cancelled, its directory, the lab.
struct GpuLab {
    m: Manager,
    _cancel: lab::CancelOnDrop,
    dir: tempfile::TempDir,
    _lab: std::sync::MutexGuard<'static, ()>,
}

impl GpuLab {
    fn start() -> GpuLab {
        let lab = lab::require();
        let dir = tempfile::tempdir().unwrap();
        let cancel = lab::CancelOnDrop(dir.path().to_path_buf());
        let gpu = lab::shipped_profile("lab-gpu");
        let env = configure(dir.path(), &[("lab-gpu", &gpu)], FAST);
        GpuLab {
            m: start_tls_manager(dir.path(), &env),
            _cancel: cancel,
            dir,
            _lab: lab,
        }
    }
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_gpu_pilot_gets_both_gpus_of_the_gpu_partition_from_slurm() {
    let lab = GpuLab::start();
    let (dir, m) = (&lab.dir, &lab.m);
    let seen = dir.path().join("slurm-job-gpus");
    let command = format!("sh -c 'echo \"$SLURM_JOB_GPUS\" > {}'", seen.display());
    let app = m.submit(array_app("gpu-lab", &command, 1));
    let summary = m.wait_finished(app, Duration::from_secs(180));
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    // Slurm granted the pilot both devices of n5 (gres.conf), as the task inherited.
    let granted = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(granted.trim(), "0,1", "SLURM_JOB_GPUS of the pilot's job");
    let pilot = pilots(m)
        .into_iter()
        .find(|p| p["platform"] == "lab-gpu" && !p["registered_ms"].is_null());
    assert!(pilot.is_some(), "a registered lab-gpu pilot ran it");
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn cpu_only_work_never_gets_a_gpu_pilot_while_a_cpu_partition_can_take_it() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let (debug, gpu) = (
        lab::shipped_profile("lab-debug"),
        lab::shipped_profile("lab-gpu"),
    );
    let env = configure(
        dir.path(),
        &[("lab-debug", &debug), ("lab-gpu", &gpu)],
        FAST,
    );
    let m = start_tls_manager(dir.path(), &env);
    // More work than lab-debug's one pilot runs at once: demand that, without resource
    // fit, the provisioner would spread over the idle GPU partition too.
    let app = m.submit(array_app("cpu-only", "sleep 1", 40));
    wait_until("a lab-debug pilot", Duration::from_secs(60), || {
        pilots(&m)
            .iter()
            .any(|p| p["platform"] == "lab-debug")
            .then_some(())
    });
    let summary = m.wait_finished(app, Duration::from_secs(300));
    assert_eq!(summary["counts"]["done"], 40, "{summary}");
    let on_gpu: Vec<_> = pilots(&m)
        .into_iter()
        .filter(|p| p["platform"] == "lab-gpu")
        .collect();
    assert!(
        on_gpu.is_empty(),
        "CPU-only work got GPU pilots: {on_gpu:?}"
    );
}

/// Submits `n` tasks asking `gpus` each that run [`together`], reporting to `dir`, and waits
/// until they have ended; returns each task's (devices, share, running together).
fn run_together(m: &Manager, dir: &Path, gpus: f64, n: usize) -> Vec<(String, String, usize)> {
    let command = format!("sh -c '{}'", together(dir, n));
    let mut spec = array_app("gpu-together", &command, n as u64);
    spec["gpus"] = gpus.into();
    let app = m.submit(spec);
    let summary = m.wait_finished(app, Duration::from_secs(240));
    assert_eq!(summary["counts"]["done"], n, "{summary}");
    reports(dir, n)
}

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_gpu_pilot_registers_both_gpus_and_binds_each_task_to_its_own_or_a_shared_device() {
    let lab = GpuLab::start();
    let (dir, m) = (&lab.dir, &lab.m);

    // Two whole-GPU tasks, running at the same time, see different devices.
    let whole = report_dir(dir.path(), "whole", true);
    let r = run_together(m, &whole, 1.0, 2);
    assert_eq!(
        tasks_per_device(&r, "1", 2),
        devices(&[(LAB_GPU_0, 1), (LAB_GPU_1, 1)]),
        "each task sees its own device"
    );

    // The pilot's agent registered the two devices Slurm granted its job.
    let (status, agents) = m.http().get("/v1/agents", &m.admin);
    assert_eq!(status, 200, "{agents}");
    let agent = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["platform"] == "lab-gpu")
        .unwrap_or_else(|| panic!("no lab-gpu agent: {agents}"));
    let uuids: Vec<&Value> = agent["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| &g["uuid"])
        .collect();
    assert_eq!(uuids, [LAB_GPU_0, LAB_GPU_1], "{agent}");
    assert_eq!(agent["gpus"][0]["model"], "NVIDIA Lab Fake 16GB", "{agent}");
    assert_eq!(agent["gpus"][0]["memory_mib"], 16384, "{agent}");

    // Four half-GPU tasks share the two devices two by two.
    let half = report_dir(dir.path(), "half", true);
    let r = run_together(m, &half, 0.5, 4);
    assert_eq!(
        tasks_per_device(&r, "0.5", 4),
        devices(&[(LAB_GPU_0, 2), (LAB_GPU_1, 2)])
    );
}
