//! What the batch system granted this job, so the agent never offers a device its job was
//! not given. One source decides, the most exact first:
//! 1. `CUDA_VISIBLE_DEVICES` (NVIDIA) / `ROCR_VISIBLE_DEVICES` (AMD) naming UUIDs;
//! 2. `SLURM_JOB_GPUS` (or `SLURM_STEP_GPUS`): the driver's indices of the job's GPUs;
//! 3. PBS's `PBS_GPUFILE`: lines `HOST-gpuN`, those of this host;
//! 4. `CUDA_VISIBLE_DEVICES` / `ROCR_VISIBLE_DEVICES` / `HIP_VISIBLE_DEVICES` naming
//!    indices.
//!
//! Without any of them the node's GPUs are all the agent's. An empty list, `NoDevFiles`
//! (what Slurm sets for a job without GPUs) or `-1` grants none.

use super::LocalGpu;
use hetpilot_protocol::resources::GpuVendor;
use std::collections::BTreeSet;

/// Which of a vendor's devices the job may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    All,
    Uuids(BTreeSet<String>),
    Indices(BTreeSet<u32>),
}

impl Grant {
    fn allows(&self, gpu: &LocalGpu) -> bool {
        match self {
            Grant::All => true,
            Grant::Uuids(ids) => ids.contains(&gpu.device.uuid),
            Grant::Indices(ix) => ix.contains(&gpu.device.index),
        }
    }
}

/// Reads a device list: `None` if it says nothing usable, else UUIDs or indices.
fn list(value: &str) -> Grant {
    let items: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty()
        || items
            .iter()
            .any(|s| *s == "NoDevFiles" || s.starts_with('-'))
    {
        return Grant::Indices(BTreeSet::new());
    }
    if items.iter().all(|s| s.bytes().all(|b| b.is_ascii_digit())) {
        // An index past u32 names no device.
        return Grant::Indices(items.iter().filter_map(|s| s.parse().ok()).collect());
    }
    Grant::Uuids(items.iter().map(|s| s.to_string()).collect())
}

/// Slurm's `SLURM_JOB_GPUS`: indices, possibly as ranges (`0-1,3`).
fn slurm(value: &str) -> Grant {
    let mut ix = BTreeSet::new();
    for part in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
            // A range is bounded by the most GPUs a node can have, whatever it says.
            ix.extend((a..=b).take(super::MAX_GPUS_PER_AGENT));
        }
    }
    Grant::Indices(ix)
}

/// PBS's GPU file: one `HOST-gpuN` line per granted GPU, for every host of the job.
fn pbs_file(text: &str, host: &str) -> Grant {
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_string();
    let me = short(host);
    let ix = text
        .lines()
        .filter_map(|l| l.trim().rsplit_once("-gpu"))
        .filter(|(h, _)| short(h) == me)
        .filter_map(|(_, n)| n.parse().ok())
        .collect();
    Grant::Indices(ix)
}

/// The grant for `vendor`'s devices and the variable it came from.
pub fn grant(
    vendor: GpuVendor,
    env: &dyn Fn(&str) -> Option<String>,
    host: &str,
) -> (Grant, Option<&'static str>) {
    let visible: &[&'static str] = match vendor {
        GpuVendor::Nvidia => &["CUDA_VISIBLE_DEVICES"],
        GpuVendor::Amd => &["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"],
    };
    let visible = visible
        .iter()
        .find_map(|v| env(v).map(|value| (list(&value), *v)));
    if let Some((g @ Grant::Uuids(_), var)) = &visible {
        return (g.clone(), Some(var));
    }
    for var in ["SLURM_JOB_GPUS", "SLURM_STEP_GPUS"] {
        if let Some(value) = env(var) {
            return (slurm(&value), Some(var));
        }
    }
    if let Some(path) = env("PBS_GPUFILE") {
        match std::fs::read_to_string(&path) {
            Ok(text) => return (pbs_file(&text, host), Some("PBS_GPUFILE")),
            // A grant the agent cannot read grants nothing it could trust.
            Err(e) => {
                tracing::warn!(path, error = %e, "cannot read PBS_GPUFILE: offering no GPU");
                return (Grant::Indices(BTreeSet::new()), Some("PBS_GPUFILE"));
            }
        }
    }
    match visible {
        Some((g, var)) => (g, Some(var)),
        None => (Grant::All, None),
    }
}

/// Keeps the GPUs the job was granted; also says which variables decided.
pub fn restrict(
    gpus: Vec<LocalGpu>,
    env: &dyn Fn(&str) -> Option<String>,
    host: &str,
) -> (Vec<LocalGpu>, Vec<String>) {
    let mut by = Vec::new();
    let mut kept = Vec::new();
    for vendor in [GpuVendor::Nvidia, GpuVendor::Amd] {
        let of_vendor: Vec<LocalGpu> = gpus
            .iter()
            .filter(|g| g.device.vendor == vendor)
            .cloned()
            .collect();
        if of_vendor.is_empty() {
            continue;
        }
        let (grant, var) = grant(vendor, env, host);
        if let Some(var) = var {
            if !by.iter().any(|b| b == var) {
                by.push(var.to_string());
            }
        }
        let before = of_vendor.len();
        kept.extend(of_vendor.into_iter().filter(|g| grant.allows(g)));
        tracing::info!(
            ?vendor,
            found = before,
            granted = kept.iter().filter(|g| g.device.vendor == vendor).count(),
            by = var.unwrap_or("nothing (all the node's)"),
            "GPUs"
        );
    }
    (kept, by)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::resources::GpuDevice;
    use std::collections::HashMap;

    fn gpu(index: u32, vendor: GpuVendor) -> LocalGpu {
        LocalGpu {
            device: GpuDevice {
                index,
                uuid: format!("GPU-{index}{index}{index}"),
                model: "m".into(),
                memory_mib: 1,
                vendor,
            },
            nodes: vec![],
        }
    }

    fn kept(env: &[(&str, &str)], host: &str) -> Vec<(u32, GpuVendor)> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let gpus = (0..4)
            .map(|i| gpu(i, GpuVendor::Nvidia))
            .chain((0..2).map(|i| gpu(i, GpuVendor::Amd)))
            .collect();
        restrict(gpus, &|k| env.get(k).cloned(), host)
            .0
            .iter()
            .map(|g| (g.device.index, g.device.vendor))
            .collect()
    }

    const N: GpuVendor = GpuVendor::Nvidia;
    const A: GpuVendor = GpuVendor::Amd;

    #[test]
    fn without_a_batch_grant_all_the_nodes_gpus_are_offered() {
        assert_eq!(kept(&[], "n1").len(), 6);
    }

    #[test]
    fn cuda_visible_devices_by_uuid_or_index_and_empty_grants_none() {
        assert_eq!(
            kept(&[("CUDA_VISIBLE_DEVICES", "GPU-333,GPU-111")], "n1"),
            [(1, N), (3, N), (0, A), (1, A)]
        );
        assert_eq!(
            kept(&[("CUDA_VISIBLE_DEVICES", "2")], "n1"),
            [(2, N), (0, A), (1, A)]
        );
        for none in ["", "NoDevFiles", "-1", " , "] {
            assert_eq!(
                kept(&[("CUDA_VISIBLE_DEVICES", none)], "n1"),
                [(0, A), (1, A)],
                "{none:?}"
            );
        }
        // A UUID the node does not have grants nothing in its place.
        assert_eq!(
            kept(
                &[
                    ("CUDA_VISIBLE_DEVICES", "GPU-999"),
                    ("ROCR_VISIBLE_DEVICES", "")
                ],
                "n1"
            ),
            []
        );
        assert_eq!(
            kept(&[("CUDA_VISIBLE_DEVICES", "99999999999")], "n1"),
            [(0, A), (1, A)]
        );
    }

    #[test]
    fn slurm_job_gpus_names_driver_indices_over_renumbered_visible_devices() {
        // Slurm with device cgroups renumbers CUDA_VISIBLE_DEVICES from 0; its
        // SLURM_JOB_GPUS keeps the driver's indices.
        assert_eq!(
            kept(
                &[("SLURM_JOB_GPUS", "2,3"), ("CUDA_VISIBLE_DEVICES", "0,1")],
                "n1"
            ),
            [(2, N), (3, N)]
        );
        assert_eq!(
            kept(&[("SLURM_JOB_GPUS", "1-2")], "n1"),
            [(1, N), (2, N), (1, A)]
        );
        // A huge range is bounded, not a long loop.
        assert_eq!(kept(&[("SLURM_JOB_GPUS", "0-4294967295")], "n1").len(), 6);
    }

    #[test]
    fn amd_devices_follow_rocr_visible_devices() {
        assert_eq!(
            kept(
                &[("ROCR_VISIBLE_DEVICES", "1"), ("CUDA_VISIBLE_DEVICES", "")],
                "n1"
            ),
            [(1, A)]
        );
        assert_eq!(
            kept(
                &[
                    ("HIP_VISIBLE_DEVICES", "GPU-000"),
                    ("CUDA_VISIBLE_DEVICES", "")
                ],
                "n1"
            ),
            [(0, A)]
        );
    }

    #[test]
    fn pbs_gpu_file_lines_of_this_host() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gpus");
        std::fs::write(&file, "n1-gpu1\nn2-gpu0\nn1.cluster-gpu3\n").unwrap();
        let path = file.to_str().unwrap();
        assert_eq!(
            kept(&[("PBS_GPUFILE", path)], "n1.cluster"),
            [(1, N), (3, N), (1, A)]
        );
        assert_eq!(kept(&[("PBS_GPUFILE", "/nonexistent/gpus")], "n1"), []);
    }
}
