//! The GPUs this agent may give its tasks: found through NVML (the NVIDIA driver's
//! library, loaded at run time, so a node without the driver simply has no NVIDIA GPUs),
//! else `nvidia-smi`, and AMD's through the kernel's KFD topology in sysfs; then kept to
//! what the batch job was granted (see `granted`). Each task is then bound to its own
//! devices (see `binding`).

pub mod amd;
pub mod binding;
pub mod check;
pub mod granted;
pub mod nvidia_smi;
pub mod nvml;

use hetpilot_protocol::resources::{GpuDevice, MAX_GPUS_PER_AGENT};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Whether the agent looks for GPUs (`--gpus`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Detection {
    /// Offer none: tasks of this agent never get a GPU (and see none).
    None,
    /// Find the node's GPUs and offer those the batch job was granted.
    #[default]
    Auto,
}

/// One GPU this agent may give its tasks, with the device files a sandboxed task needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocalGpu {
    #[serde(flatten)]
    pub device: GpuDevice,
    /// The device's own files (`/dev/nvidia3`, `/dev/dri/renderD129`).
    pub nodes: Vec<PathBuf>,
}

/// The GPUs this agent offers, and where it learnt of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Inventory {
    /// `nvml`, `nvidia-smi`, `sysfs` (AMD), joined with `+`; `none` when no GPU was found.
    pub source: String,
    /// What restricted them (`CUDA_VISIBLE_DEVICES`, `SLURM_JOB_GPUS`, ...), if anything.
    pub granted_by: Vec<String>,
    pub gpus: Vec<LocalGpu>,
}

impl Inventory {
    /// The devices, as registered with the manager.
    pub fn devices(&self) -> Vec<GpuDevice> {
        self.gpus.iter().map(|g| g.device.clone()).collect()
    }

    /// The GPU with driver index `index` and UUID `uuid`, if this agent has it.
    pub fn find(&self, index: u32, uuid: &str) -> Option<&LocalGpu> {
        self.gpus
            .iter()
            .find(|g| g.device.index == index && g.device.uuid == uuid)
    }
}

/// Finds this node's GPUs and keeps those the batch job granted (read from `env`).
pub fn detect(mode: Detection, env: &dyn Fn(&str) -> Option<String>, host: &str) -> Inventory {
    if mode == Detection::None {
        return Inventory {
            source: "none".into(),
            ..Inventory::default()
        };
    }
    let mut sources = Vec::new();
    let mut found = Vec::new();
    match nvml::devices() {
        Ok(Some(gpus)) => {
            sources.push("nvml");
            found.extend(gpus);
        }
        outcome => {
            if let Err(e) = outcome {
                tracing::warn!(error = %e, "NVML could not list the GPUs; asking nvidia-smi");
            }
            match nvidia_smi::devices() {
                Ok(Some(gpus)) => {
                    sources.push("nvidia-smi");
                    found.extend(gpus);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "nvidia-smi: no NVIDIA GPUs offered"),
            }
        }
    }
    let amd = amd::devices(Path::new(amd::SYSFS_TOPOLOGY));
    if !amd.is_empty() {
        sources.push("sysfs");
        found.extend(amd);
    }
    let (mut gpus, granted_by) = granted::restrict(found, env, host);
    if gpus.len() > MAX_GPUS_PER_AGENT {
        tracing::warn!(
            found = gpus.len(),
            "more GPUs than one agent may offer; offering the first {MAX_GPUS_PER_AGENT}"
        );
        gpus.truncate(MAX_GPUS_PER_AGENT);
    }
    Inventory {
        source: if sources.is_empty() {
            "none".into()
        } else {
            sources.join("+")
        },
        granted_by,
        gpus,
    }
}

/// A text from a driver tool made safe to register and show: printable, trimmed, at most
/// `max` characters.
pub(crate) fn clean(text: &str, max: usize) -> String {
    text.trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(max)
        .collect()
}
