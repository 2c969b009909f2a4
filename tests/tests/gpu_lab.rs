//! GPU pilots against the real local lab (`deploy/lab/start.sh`), whose partition `gpu`
//! is node n5 with two fake GPUs (device nodes that gres.conf names, and a fake
//! `nvidia-smi` that lab-gpu.toml puts on the pilot's PATH): a pilot there gets both from
//! Slurm (SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES); CPU-only work never
//! makes the manager submit a pilot to the GPU partition while a CPU partition can take it.

use hetpilot_e2e::lab::{self, configure, pilots, start_tls_manager};
use hetpilot_e2e::{array_app, wait_until};
use std::time::Duration;

const FAST: &str = "interval_secs = 0.5\nregister_timeout_secs = 120\nbackoff_base_secs = 2\nbackoff_max_secs = 30";

#[test]
#[ignore = "needs the local lab: deploy/lab/start.sh"]
fn a_gpu_pilot_gets_both_gpus_of_the_gpu_partition_from_slurm() {
    let _lab = lab::require();
    let dir = tempfile::tempdir().unwrap();
    let _cancel = lab::CancelOnDrop(dir.path().to_path_buf());
    let gpu = lab::shipped_profile("lab-gpu");
    let env = configure(dir.path(), &[("lab-gpu", &gpu)], FAST);
    let m = start_tls_manager(dir.path(), &env);
    let seen = dir.path().join("slurm-job-gpus");
    let command = format!("sh -c 'echo \"$SLURM_JOB_GPUS\" > {}'", seen.display());
    let app = m.submit(array_app("gpu-lab", &command, 1));
    let summary = m.wait_finished(app, Duration::from_secs(180));
    assert_eq!(summary["counts"]["done"], 1, "{summary}");
    // Slurm granted the pilot both devices of n5 (gres.conf), as the task inherited.
    let granted = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(granted.trim(), "0,1", "SLURM_JOB_GPUS of the pilot's job");
    let pilot = pilots(&m)
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
