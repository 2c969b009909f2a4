//! NVIDIA GPUs through NVML, the driver's management library, loaded at run time: where
//! `libnvidia-ml.so.1` or the driver is missing there are no NVIDIA GPUs, and the same
//! binary runs on every node.

use super::{clean, LocalGpu};
use hetpilot_protocol::resources::{GpuDevice, GpuVendor, MAX_GPUS_PER_AGENT};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use std::path::PathBuf;

/// The node's NVIDIA GPUs; `Ok(None)` where there is no NVIDIA driver to ask.
pub fn devices() -> Result<Option<Vec<LocalGpu>>, NvmlError> {
    let nvml = match Nvml::init() {
        Ok(nvml) => nvml,
        Err(NvmlError::LibloadingError(_) | NvmlError::DriverNotLoaded)
        | Err(NvmlError::LibraryNotFound) => return Ok(None),
        Err(e) => return Err(e),
    };
    let count = nvml.device_count()?;
    let mut gpus = Vec::new();
    for i in 0..count.min(MAX_GPUS_PER_AGENT as u32) {
        let d = nvml.device_by_index(i)?;
        let index = d.index()?;
        // The device file is named by the minor number, which is the index on bare metal.
        let minor = d.minor_number().unwrap_or(index);
        gpus.push(LocalGpu {
            device: GpuDevice {
                index,
                uuid: clean(&d.uuid()?, 96),
                model: clean(&d.name()?, 128),
                memory_mib: d.memory_info()?.total / (1024 * 1024),
                vendor: GpuVendor::Nvidia,
            },
            nodes: vec![PathBuf::from(format!("/dev/nvidia{minor}"))],
        });
    }
    Ok(Some(gpus))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_node_without_the_driver_has_no_nvidia_gpus_and_no_error() {
        // These machines have no NVIDIA driver: NVML cannot load, which is "no GPUs".
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            return;
        }
        assert!(matches!(super::devices(), Ok(None)));
    }
}
