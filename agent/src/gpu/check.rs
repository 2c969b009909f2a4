//! `hetpilot-agent gpus`: what this agent would offer, and (`--check-nvidia-smi`) whether
//! it matches what `nvidia-smi --query-gpu=name,memory.total,uuid` says, device by device.
//! `deploy/gpu-check.sh` reads its plain lines instead of parsing tools' output itself.

use super::nvidia_smi::{self, SmiError};
use super::Inventory;
use hetpilot_protocol::resources::{GpuDevice, GpuVendor};

/// The fields compared with the agent's detection.
pub const CHECK_QUERY: &str = "name,memory.total,uuid";

/// How the agent's NVIDIA devices differ from `nvidia-smi`'s output (`smi_out`, of
/// [`CHECK_QUERY`] without header or units): one sentence per difference, none if equal.
pub fn compare(devices: &[GpuDevice], smi_out: &str) -> Result<Vec<String>, SmiError> {
    let rows = nvidia_smi::parse(smi_out, CHECK_QUERY)?;
    let ours: Vec<&GpuDevice> = devices
        .iter()
        .filter(|d| d.vendor == GpuVendor::Nvidia)
        .collect();
    let mut differences = Vec::new();
    if rows.is_empty() {
        differences.push("nvidia-smi lists no GPU".to_string());
    }
    for row in &rows {
        let uuid = row.uuid.as_deref().unwrap_or_default();
        let Some(d) = ours.iter().find(|d| d.uuid == uuid) else {
            differences.push(format!(
                "nvidia-smi lists {uuid}, which the agent did not find"
            ));
            continue;
        };
        if row.name.as_deref() != Some(d.model.as_str()) {
            differences.push(format!(
                "{uuid}: the agent says model `{}`, nvidia-smi `{}`",
                d.model,
                row.name.as_deref().unwrap_or_default()
            ));
        }
        if row.memory_mib.is_some_and(|m| m != d.memory_mib) {
            differences.push(format!(
                "{uuid}: the agent says {} MiB, nvidia-smi {} MiB",
                d.memory_mib,
                row.memory_mib.unwrap_or_default()
            ));
        }
    }
    for d in &ours {
        if !rows
            .iter()
            .any(|r| r.uuid.as_deref() == Some(d.uuid.as_str()))
        {
            differences.push(format!(
                "the agent found {}, which nvidia-smi does not list",
                d.uuid
            ));
        }
    }
    Ok(differences)
}

/// One line per GPU, `INDEX UUID VENDOR DEVICE_FILE|- MEMORY_MIB MODEL...`, for scripts.
pub fn lines(inventory: &Inventory) -> String {
    inventory
        .gpus
        .iter()
        .map(|g| {
            let node = g
                .nodes
                .first()
                .map_or("-".to_string(), |n| n.display().to_string());
            let vendor = match g.device.vendor {
                GpuVendor::Nvidia => "nvidia",
                GpuVendor::Amd => "amd",
            };
            format!(
                "{} {} {vendor} {node} {} {}\n",
                g.device.index, g.device.uuid, g.device.memory_mib, g.device.model
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::LocalGpu;

    fn h100(index: u32, uuid: &str) -> GpuDevice {
        GpuDevice {
            index,
            uuid: uuid.into(),
            model: "NVIDIA H100 80GB HBM3".into(),
            memory_mib: 81559,
            vendor: GpuVendor::Nvidia,
        }
    }

    #[test]
    fn equal_detection_has_no_difference() {
        let out = "NVIDIA H100 80GB HBM3, 81559, GPU-a\nNVIDIA H100 80GB HBM3, 81559, GPU-b\n";
        let ours = [h100(1, "GPU-b"), h100(0, "GPU-a")];
        assert_eq!(compare(&ours, out).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn each_difference_is_named() {
        let out = "NVIDIA H100 80GB HBM3, 81559, GPU-a\nNVIDIA H100 PCIe, 81559, GPU-b\n\
                   NVIDIA H100 80GB HBM3, 80000, GPU-c\n";
        let ours = [
            h100(0, "GPU-a"),
            h100(1, "GPU-b"),
            h100(2, "GPU-c"),
            h100(3, "GPU-d"),
        ];
        let d = compare(&ours, out).unwrap();
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].contains(
            "GPU-b: the agent says model `NVIDIA H100 80GB HBM3`, nvidia-smi `NVIDIA H100 PCIe`"
        ));
        assert!(d[1].contains("GPU-c: the agent says 81559 MiB, nvidia-smi 80000 MiB"));
        assert!(d[2].contains("the agent found GPU-d, which nvidia-smi does not list"));
        let missing = compare(&ours[..1], "NVIDIA H100 80GB HBM3, 81559, GPU-z\n").unwrap();
        assert!(missing
            .iter()
            .any(|m| m.contains("GPU-z, which the agent did not find")));
        assert_eq!(compare(&[], "").unwrap(), ["nvidia-smi lists no GPU"]);
        assert!(compare(&[], "garbage\n").is_err());
    }

    #[test]
    fn script_lines_carry_index_uuid_and_device_file() {
        let inv = Inventory {
            source: "nvml".into(),
            granted_by: vec![],
            gpus: vec![LocalGpu {
                device: h100(3, "GPU-c"),
                nodes: vec!["/dev/nvidia3".into()],
            }],
        };
        assert_eq!(
            lines(&inv),
            "3 GPU-c nvidia /dev/nvidia3 81559 NVIDIA H100 80GB HBM3\n"
        );
    }
}
