//! Binds a run to the GPUs it was granted: the variables that make CUDA and ROCm show it
//! exactly its devices (by UUID), and the device files a sandboxed run may open. A run
//! granted no GPU gets variables that show it none, whatever the agent's own environment
//! or the application's settings say.

use super::Inventory;
use hetpilot_protocol::resources::{GpuVendor, ResourceGrant};
use std::path::{Path, PathBuf};

/// The variables a run's binding sets; the agent's and the application's own values of
/// them never reach a task.
pub const VARIABLES: [&str; 5] = [
    "CUDA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "HETPILOT_GPUS",
    "HETPILOT_GPU_SHARE",
];

/// The files every CUDA process opens besides its devices' own.
pub const NVIDIA_CONTROL: [&str; 4] = [
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
];

/// The file every ROCm process opens besides its devices' render nodes.
pub const AMD_CONTROL: [&str; 1] = ["/dev/kfd"];

/// What a run sees of the node's GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// `KEY=VALUE` for each of [`VARIABLES`].
    pub env: Vec<String>,
    /// The device files (existing ones) a sandboxed run may open.
    pub nodes: Vec<PathBuf>,
}

/// The binding of a run granted `grant` on an agent that has `gpus`; an error names a
/// granted device this agent does not have (the run must not start on a guess).
pub fn bind(grant: &ResourceGrant, gpus: &Inventory) -> Result<Binding, String> {
    bind_with(grant, gpus, &|p: &Path| p.exists())
}

/// [`bind`] with `exists` standing for the node's `/dev`.
fn bind_with(
    grant: &ResourceGrant,
    gpus: &Inventory,
    exists: &dyn Fn(&Path) -> bool,
) -> Result<Binding, String> {
    let mut cuda = Vec::new();
    let mut rocm = Vec::new();
    let mut indices = Vec::new();
    let mut shares = Vec::new();
    let mut nodes: Vec<PathBuf> = Vec::new();
    for share in &grant.gpus {
        let gpu = gpus.find(share.index, &share.uuid).ok_or_else(|| {
            format!(
                "granted GPU {} ({}) is not one of this agent's",
                share.index,
                super::clean(&share.uuid, 96)
            )
        })?;
        match gpu.device.vendor {
            GpuVendor::Nvidia => cuda.push(gpu.device.uuid.as_str()),
            GpuVendor::Amd => rocm.push(gpu.device.uuid.as_str()),
        }
        indices.push(gpu.device.index.to_string());
        shares.push(share.amount.to_string());
        nodes.extend(gpu.nodes.iter().cloned());
    }
    if !cuda.is_empty() {
        nodes.extend(NVIDIA_CONTROL.iter().map(PathBuf::from));
    }
    if !rocm.is_empty() {
        nodes.extend(AMD_CONTROL.iter().map(PathBuf::from));
    }
    nodes.retain(|n| exists(n));
    nodes.dedup();
    // CUDA shows no device for an empty list; ROCm stops at the first invalid entry.
    let rocm = if rocm.is_empty() {
        "-1".to_string()
    } else {
        rocm.join(",")
    };
    Ok(Binding {
        env: vec![
            format!("CUDA_VISIBLE_DEVICES={}", cuda.join(",")),
            format!("ROCR_VISIBLE_DEVICES={rocm}"),
            format!("HIP_VISIBLE_DEVICES={rocm}"),
            format!("HETPILOT_GPUS={}", indices.join(",")),
            format!("HETPILOT_GPU_SHARE={}", shares.join(",")),
        ],
        nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::LocalGpu;
    use hetpilot_protocol::resources::{GpuDevice, GpuShare, ResourceAmount};

    fn inventory() -> Inventory {
        let gpu = |index: u32, uuid: &str, vendor, node: &str| LocalGpu {
            device: GpuDevice {
                index,
                uuid: uuid.into(),
                model: "m".into(),
                memory_mib: 1,
                vendor,
            },
            nodes: vec![node.into()],
        };
        Inventory {
            source: "test".into(),
            granted_by: vec![],
            gpus: vec![
                gpu(0, "GPU-aaa", GpuVendor::Nvidia, "/dev/nvidia0"),
                gpu(1, "GPU-bbb", GpuVendor::Nvidia, "/dev/nvidia1"),
                gpu(2, "GPU-ccc", GpuVendor::Nvidia, "/dev/nvidia2"),
                gpu(
                    0,
                    "GPU-0c48221216b3d5f6",
                    GpuVendor::Amd,
                    "/dev/dri/renderD128",
                ),
            ],
        }
    }

    fn share(index: u32, uuid: &str, amount: f64) -> GpuShare {
        GpuShare {
            index,
            uuid: uuid.into(),
            amount: ResourceAmount::parse(amount).unwrap(),
        }
    }

    fn grant(gpus: Vec<GpuShare>) -> ResourceGrant {
        ResourceGrant {
            gpus,
            ..Default::default()
        }
    }

    /// Every node "exists" except `/dev/nvidia-modeset`.
    fn bound(g: &ResourceGrant) -> Result<Binding, String> {
        bind_with(g, &inventory(), &|p| p != Path::new("/dev/nvidia-modeset"))
    }

    #[test]
    fn a_run_sees_exactly_its_devices_by_uuid() {
        let b = bound(&grant(vec![
            share(2, "GPU-ccc", 1.0),
            share(0, "GPU-aaa", 1.0),
        ]))
        .unwrap();
        assert_eq!(
            b.env,
            [
                "CUDA_VISIBLE_DEVICES=GPU-ccc,GPU-aaa",
                "ROCR_VISIBLE_DEVICES=-1",
                "HIP_VISIBLE_DEVICES=-1",
                "HETPILOT_GPUS=2,0",
                "HETPILOT_GPU_SHARE=1,1",
            ]
        );
        assert_eq!(
            b.nodes,
            [
                "/dev/nvidia2",
                "/dev/nvidia0",
                "/dev/nvidiactl",
                "/dev/nvidia-uvm",
                "/dev/nvidia-uvm-tools"
            ]
            .map(PathBuf::from),
            "the granted devices and the existing control nodes, never another device"
        );
    }

    #[test]
    fn a_share_of_a_device_is_named_with_its_fraction() {
        let b = bound(&grant(vec![share(1, "GPU-bbb", 0.25)])).unwrap();
        assert!(b.env.contains(&"CUDA_VISIBLE_DEVICES=GPU-bbb".to_string()));
        assert!(b.env.contains(&"HETPILOT_GPU_SHARE=0.25".to_string()));
        assert!(b.env.contains(&"HETPILOT_GPUS=1".to_string()));
    }

    #[test]
    fn a_run_without_gpus_sees_none() {
        let b = bound(&ResourceGrant::default()).unwrap();
        assert_eq!(
            b.env,
            [
                "CUDA_VISIBLE_DEVICES=",
                "ROCR_VISIBLE_DEVICES=-1",
                "HIP_VISIBLE_DEVICES=-1",
                "HETPILOT_GPUS=",
                "HETPILOT_GPU_SHARE=",
            ]
        );
        assert!(b.nodes.is_empty());
    }

    #[test]
    fn amd_devices_are_bound_through_rocm_and_their_render_node() {
        let b = bound(&grant(vec![share(0, "GPU-0c48221216b3d5f6", 1.0)])).unwrap();
        assert!(b.env.contains(&"CUDA_VISIBLE_DEVICES=".to_string()));
        assert!(b
            .env
            .contains(&"ROCR_VISIBLE_DEVICES=GPU-0c48221216b3d5f6".to_string()));
        assert!(b
            .env
            .contains(&"HIP_VISIBLE_DEVICES=GPU-0c48221216b3d5f6".to_string()));
        assert_eq!(
            b.nodes,
            ["/dev/dri/renderD128", "/dev/kfd"].map(PathBuf::from)
        );
    }

    #[test]
    fn a_device_this_agent_lacks_is_refused() {
        for wrong in [share(7, "GPU-aaa", 1.0), share(0, "GPU-zzz", 1.0)] {
            let err = bound(&grant(vec![wrong])).unwrap_err();
            assert!(err.contains("is not one of this agent's"), "{err}");
        }
    }
}
