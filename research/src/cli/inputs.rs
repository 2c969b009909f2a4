//! Input files the simulations read besides traces: runtime profiles (the two-level
//! simulator) and machine pools (the fairshare simulator). Errors name the file.

use std::path::Path;

use anyhow::Context;
use hetpilot_core::fairshare::{Machine, MachinePool};
use hetpilot_core::sched::RuntimeProfile;
use hetpilot_core::trace::{parse_alea_machines, parse_platform_profile};

/// Read and parse a runtime profile file.
pub fn load_profile(path: &Path) -> anyhow::Result<RuntimeProfile> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read profile {}", path.display()))?;
    Ok(RuntimeProfile::from_toml_str(
        &path.display().to_string(),
        &text,
    )?)
}

/// Read a machine pool: `.toml` is a `[[machine]]` profile, anything else an Alea machines
/// file.
pub fn load_machine_pool(path: &Path) -> anyhow::Result<MachinePool> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let machines: Vec<Machine> = if path.extension().is_some_and(|e| e == "toml") {
        parse_platform_profile(&text).with_context(|| format!("{}", path.display()))?
    } else {
        parse_alea_machines(&text).with_context(|| format!("{}", path.display()))?
    };
    MachinePool::new(machines).with_context(|| format!("{}", path.display()))
}
