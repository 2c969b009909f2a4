//! GPU tasks that run together: each marks itself started, waits until the others have
//! (and the test releases them), and reports the devices it was bound to, its share and how
//! many ran at once, so a test can check binding and sharing from the files they leave;
//! and a fake `nvidia-smi` listing two GPUs, with an agent that finds them through it.

use crate::{bin, Manager};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// What each of the `n` tasks reporting to `dir` wrote: `CUDA_VISIBLE_DEVICES
/// HETPILOT_GPU_SHARE RUNNING`.
pub fn reports(dir: &Path, n: usize) -> Vec<(String, String, usize)> {
    (0..n)
        .map(|i| {
            let text = std::fs::read_to_string(dir.join(format!("{i}.env")))
                .unwrap_or_else(|e| panic!("task {i} left no report: {e}"));
            let mut f = text.split_whitespace();
            let mut next = || f.next().unwrap_or_default().to_string();
            (next(), next(), next().parse().unwrap_or(0))
        })
        .collect()
}

/// A task command that marks itself started, waits (bounded) until `n` tasks have and the
/// file `release` is in `dir`, and reports its devices, its share and how many tasks were
/// running together (the shell's `${VAR:--}` braces doubled, as the command template reads
/// `{{` as a literal brace).
pub fn together(dir: &Path, n: usize) -> String {
    let d = dir.display();
    format!(
        "touch {d}/$HETPILOT_INDEX.started; i=0; \
         while ( [ $(ls {d}/*.started | wc -l) -lt {n} ] || [ ! -e {d}/release ] ) && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; \
         echo \"${{{{CUDA_VISIBLE_DEVICES:--}}}} ${{{{HETPILOT_GPU_SHARE:--}}}} $(ls {d}/*.started | wc -l)\" > {d}/$HETPILOT_INDEX.env"
    )
}

/// A directory for the reports of tasks that run [`together`], released at once when
/// `released`.
pub fn report_dir(parent: &Path, name: &str, released: bool) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    if released {
        std::fs::write(dir.join("release"), "").unwrap();
    }
    dir
}

/// How many of the tasks each device served, from their [`reports`], which must all show
/// the share `share` and all `n` tasks running together.
pub fn tasks_per_device(
    reports: &[(String, String, usize)],
    share: &str,
    n: usize,
) -> BTreeMap<String, usize> {
    assert!(
        reports
            .iter()
            .all(|(_, shown, running)| shown == share && *running == n),
        "each task's share is {share}, with {n} running together: {reports:?}"
    );
    let mut per_device = BTreeMap::new();
    for (devices, _, _) in reports {
        *per_device.entry(devices.clone()).or_default() += 1;
    }
    per_device
}

/// `[(device, tasks)]` as [`tasks_per_device`] returns it.
pub fn devices(counts: &[(&str, usize)]) -> BTreeMap<String, usize> {
    counts.iter().map(|&(d, n)| (d.to_string(), n)).collect()
}

/// Two recorded-format A100 lines, for the agent's query and for the check's.
pub const UUID_A: &str = "GPU-89fdc1e1-18b2-f499-c12b-82bcb9bfb3fa";
pub const UUID_B: &str = "GPU-d8594bd4-0fc3-8595-e355-7c98138f3b95";

/// A directory holding an executable `nvidia-smi` that answers the two queries the agent
/// makes, with `check_memory` as the memory the check's query reports for the first GPU.
pub fn fake_nvidia_smi(dir: &Path, check_memory: u32) -> PathBuf {
    let bin_dir = dir.join("fake-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let script = format!(
        "#!/bin/sh\n\
         case \"$1\" in\n\
         --query-gpu=index,uuid,name,memory.total)\n\
           printf '0, {UUID_A}, NVIDIA A100-SXM4-80GB, 81920\\n1, {UUID_B}, NVIDIA A100-SXM4-80GB, 81920\\n' ;;\n\
         --query-gpu=name,memory.total,uuid)\n\
           printf 'NVIDIA A100-SXM4-80GB, {check_memory}, {UUID_A}\\nNVIDIA A100-SXM4-80GB, 81920, {UUID_B}\\n' ;;\n\
         *) echo \"unexpected arguments: $*\" >&2; exit 2 ;;\n\
         esac\n"
    );
    let path = bin_dir.join("nvidia-smi");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin_dir
}

/// `PATH` with `first` in front.
pub fn path_with(first: &Path) -> String {
    format!(
        "{}:{}",
        first.display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    )
}

/// A local agent with four slots and the fake nvidia-smi's two GPUs, working in
/// `dir/agent`.
pub fn two_gpu_agent(m: &Manager, dir: &Path) -> Child {
    two_gpu_agent_of(m, "local", dir)
}

/// [`two_gpu_agent`] of `platform`.
pub fn two_gpu_agent_of(m: &Manager, platform: &str, dir: &Path) -> Child {
    two_gpu_agent_with(m, platform, dir, 4)
}

/// [`two_gpu_agent_of`] with `slots` slots.
pub fn two_gpu_agent_with(m: &Manager, platform: &str, dir: &Path, slots: u32) -> Child {
    let fake = fake_nvidia_smi(dir, 81920);
    let token = m.agent_token(platform);
    let work = dir.join("agent");
    std::fs::create_dir_all(&work).unwrap();
    Command::new(bin("hetpilot-agent"))
        .args(["--manager", &m.url, "--platform", platform, "--slots"])
        .arg(slots.to_string())
        .arg("--work-dir")
        .arg(&work)
        .env("HETPILOT_AGENT_TOKEN", &token)
        .env("PATH", path_with(&fake))
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("SLURM_JOB_GPUS")
        .stderr(std::fs::File::create(work.join("agent.log")).unwrap())
        .spawn()
        .unwrap()
}
