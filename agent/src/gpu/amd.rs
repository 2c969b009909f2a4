//! AMD GPUs through the kernel's KFD topology in sysfs (what ROCm itself enumerates):
//! each GPU node there has `simd_count` above 0, AMD's vendor id, a `unique_id` (which
//! ROCm shows as the UUID `GPU-<16 hex digits>`) and the minor number of its DRM render
//! node. Indices follow ROCm's order, the GPU nodes by node number.

use super::{clean, LocalGpu};
use hetpilot_protocol::resources::{GpuDevice, GpuVendor, MAX_GPUS_PER_AGENT};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where the KFD topology's nodes are.
pub const SYSFS_TOPOLOGY: &str = "/sys/class/kfd/kfd/topology/nodes";

/// AMD's PCI vendor id (0x1002).
const AMD_VENDOR_ID: u64 = 0x1002;

/// `key value` lines of a KFD `properties` file, numbers only.
fn properties(path: &Path) -> HashMap<String, u64> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// The AMD GPUs under `topology` (the KFD nodes directory); none where it is missing.
pub fn devices(topology: &Path) -> Vec<LocalGpu> {
    let Ok(entries) = std::fs::read_dir(topology) else {
        return Vec::new();
    };
    let mut nodes: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            Some((e.file_name().to_str()?.parse().ok()?, e.path()))
        })
        .collect();
    nodes.sort();
    let mut gpus = Vec::new();
    for (_, dir) in nodes {
        let p = properties(&dir.join("properties"));
        let is_gpu = p.get("simd_count").is_some_and(|&n| n > 0)
            && p.get("vendor_id") == Some(&AMD_VENDOR_ID);
        if !is_gpu || gpus.len() == MAX_GPUS_PER_AGENT {
            continue;
        }
        let name = std::fs::read_to_string(dir.join("name")).unwrap_or_default();
        let name = clean(&name, 128);
        let memory_bytes = properties(&dir.join("mem_banks/0/properties"))
            .get("size_in_bytes")
            .copied()
            .unwrap_or(0);
        let index = gpus.len() as u32;
        gpus.push(LocalGpu {
            device: GpuDevice {
                index,
                uuid: match p.get("unique_id") {
                    Some(id) => format!("GPU-{id:016x}"),
                    None => format!("AMD-{index}"),
                },
                model: if name.is_empty() {
                    "AMD GPU".into()
                } else {
                    name
                },
                memory_mib: memory_bytes / (1024 * 1024),
                vendor: GpuVendor::Amd,
            },
            nodes: p
                .get("drm_render_minor")
                .map(|m| PathBuf::from(format!("/dev/dri/renderD{m}")))
                .into_iter()
                .collect(),
        });
    }
    gpus
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(root: &Path, n: u32, props: &str, name: &str, mem: Option<u64>) {
        let dir = root.join(n.to_string());
        std::fs::create_dir_all(dir.join("mem_banks/0")).unwrap();
        std::fs::write(dir.join("properties"), props).unwrap();
        std::fs::write(dir.join("name"), name).unwrap();
        if let Some(bytes) = mem {
            std::fs::write(
                dir.join("mem_banks/0/properties"),
                format!("heap_type 1\nsize_in_bytes {bytes}\nflags 0\n"),
            )
            .unwrap();
        }
    }

    #[test]
    fn gpu_nodes_of_the_kfd_topology_are_amd_gpus_in_rocm_order() {
        let t = tempfile::tempdir().unwrap();
        // Node 0: the CPU. Nodes 1 and 2: two MI250X dies (as KFD lists them).
        node(
            t.path(),
            0,
            "cpu_cores_count 64\nsimd_count 0\nvendor_id 0\n",
            "",
            None,
        );
        let gpu = |id: u64, minor: u32| {
            format!(
                "cpu_cores_count 0\nsimd_count 440\nvendor_id 4098\ndevice_id 29704\n\
                 unique_id {id}\ndrm_render_minor {minor}\n"
            )
        };
        node(
            t.path(),
            2,
            &gpu(0x2f5c_0af3_36a2_1bd8, 129),
            "gfx90a\n",
            Some(68_702_699_520),
        );
        node(
            t.path(),
            1,
            &gpu(0x0c48_2212_16b3_d5f6, 128),
            "gfx90a\n",
            Some(68_702_699_520),
        );
        // A non-AMD accelerator node is not an AMD GPU.
        node(t.path(), 3, "simd_count 10\nvendor_id 4318\n", "x", None);
        let gpus = devices(t.path());
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].device.index, 0);
        assert_eq!(gpus[0].device.uuid, "GPU-0c48221216b3d5f6");
        assert_eq!(gpus[0].nodes, [PathBuf::from("/dev/dri/renderD128")]);
        assert_eq!(gpus[1].device.uuid, "GPU-2f5c0af336a21bd8");
        assert_eq!(gpus[1].device.model, "gfx90a");
        assert_eq!(gpus[1].device.memory_mib, 65_520);
        assert_eq!(gpus[1].device.vendor, GpuVendor::Amd);
        assert!(devices(&t.path().join("missing")).is_empty());
    }
}
