//! Named resources at the edge: an agent's offer is checked at registration (bounded
//! device lists, unique ids, printable strings, valid names), and an application's
//! requests at submission against what the configured platforms' profiles and the
//! registered agents offer: a request no platform could ever grant is refused with a 400
//! that names the field and says which platform offers what.

use super::{Manager, ServiceError};
use crate::provision::profile::PlatformProfile;
use crate::queue::{AgentState, ResourcePool};
use hetpilot_protocol::resources::{
    check_name, GpuDevice, GpuVendor, ResourceOffer, ResourceRequest, GPUS, MAX_GPUS_PER_AGENT,
    MAX_RESOURCE_NAMES,
};
use hetpilot_protocol::spec::AppSpec;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The longest device UUID or model an agent may register, in bytes.
const MAX_DEVICE_TEXT: usize = 255;
/// The most device memory an agent may register, MiB (64 TiB).
const MAX_DEVICE_MEMORY_MIB: u64 = 64 << 20;

fn bad(field: &str, problem: impl std::fmt::Display) -> ServiceError {
    ServiceError::BadRequest(format!("field `{field}`: {problem}"))
}

/// Checks what an agent offers besides cores and memory.
pub(super) fn check_offer(offer: &ResourceOffer) -> Result<(), ServiceError> {
    if offer.gpus.len() > MAX_GPUS_PER_AGENT {
        return Err(bad(
            "resources.gpus",
            format!(
                "{} devices is more than the limit of {MAX_GPUS_PER_AGENT}",
                offer.gpus.len()
            ),
        ));
    }
    let mut indices = HashSet::new();
    let mut uuids = HashSet::new();
    for gpu in &offer.gpus {
        for (what, text, required) in [("uuid", &gpu.uuid, true), ("model", &gpu.model, false)] {
            let printable = text.chars().all(|c| !c.is_control());
            if (required && text.is_empty()) || text.len() > MAX_DEVICE_TEXT || !printable {
                return Err(bad(
                    &format!("resources.gpus.{what}"),
                    format!(
                        "device {}: {} printable bytes at most{}",
                        gpu.index,
                        MAX_DEVICE_TEXT,
                        if required { ", not empty" } else { "" }
                    ),
                ));
            }
        }
        if gpu.memory_mib > MAX_DEVICE_MEMORY_MIB {
            return Err(bad(
                "resources.gpus.memory_mib",
                format!(
                    "device {}: {} is more than {MAX_DEVICE_MEMORY_MIB} (64 TiB)",
                    gpu.index, gpu.memory_mib
                ),
            ));
        }
        if !indices.insert(gpu.index) {
            return Err(bad(
                "resources.gpus.index",
                format!("device {} is listed twice", gpu.index),
            ));
        }
        if !uuids.insert(gpu.uuid.as_str()) {
            return Err(bad(
                "resources.gpus.uuid",
                format!("`{}` is listed twice", gpu.uuid),
            ));
        }
    }
    if offer.named.len() > MAX_RESOURCE_NAMES {
        return Err(bad(
            "resources.named",
            format!(
                "{} names is more than the limit of {MAX_RESOURCE_NAMES}",
                offer.named.len()
            ),
        ));
    }
    for name in offer.named.keys() {
        if name == GPUS {
            return Err(bad(
                "resources.named",
                "GPUs are offered as `resources.gpus` devices, not as a count",
            ));
        }
        check_name(name).map_err(|e| bad("resources.named", e))?;
    }
    Ok(())
}

/// What each profiled platform's pilots offer besides cores, from its profile.
#[derive(Debug, Clone, Default)]
pub struct PlatformResources(ResourcePool);

impl PlatformResources {
    /// Each profile's `gpus_per_node` and `[resources]`, by platform.
    pub fn of_profiles(profiles: &[PlatformProfile]) -> BTreeMap<String, PlatformResources> {
        profiles
            .iter()
            .map(|p| {
                let gpus = (0..p.gpus_per_node)
                    .map(|index| GpuDevice {
                        index,
                        uuid: format!("profile-{index}"),
                        model: String::new(),
                        memory_mib: 0,
                        vendor: GpuVendor::Nvidia,
                    })
                    .collect();
                let offer = ResourceOffer {
                    gpus,
                    named: p.resources.clone(),
                };
                (p.name.clone(), PlatformResources(ResourcePool::new(offer)))
            })
            .collect()
    }
}

/// What one platform offers, as a refusal shows it: `gpu: 4 GPUs, licenses 2`.
fn describe(platform: &str, offer: &ResourceOffer) -> String {
    let mut parts = Vec::new();
    if !offer.gpus.is_empty() {
        parts.push(format!("{} GPUs", offer.gpus.len()));
    }
    parts.extend(offer.named.iter().map(|(n, a)| format!("{n} {a}")));
    if parts.is_empty() {
        parts.push("no GPUs or named resources".into());
    }
    format!("{platform}: {}", parts.join(", "))
}

/// The part of `request` that refusals name: `gpus`, else its first named count.
fn field_of(request: &ResourceRequest, pools: &[(String, ResourcePool)]) -> String {
    for (name, amount) in &request.0 {
        let part = ResourceRequest([(name.clone(), *amount)].into());
        if !pools.iter().any(|(_, p)| p.could_grant(&part)) {
            return if name == GPUS {
                GPUS.to_string()
            } else {
                format!("resources.{name}")
            };
        }
    }
    "resources".to_string()
}

impl Manager {
    /// What each configured platform's profile and each active agent offers besides
    /// cores, by platform.
    fn offered_pools(&self) -> Vec<(String, ResourcePool)> {
        let mut pools: Vec<(String, ResourcePool)> = self
            .platform_state()
            .resources
            .iter()
            .map(|(name, r)| (name.clone(), r.0.clone()))
            .collect();
        let control = self.control();
        pools.extend(
            control
                .queues()
                .agents()
                .filter(|a| a.state == AgentState::Active)
                .map(|a| (a.platform.clone(), a.pool().clone())),
        );
        pools
    }

    /// Refuses an application with variants none of which any configured platform's
    /// profile or registered agent could ever grant (a variant no platform holds is
    /// simply never chosen).
    fn check_variants(&self, spec: &AppSpec) -> Result<(), ServiceError> {
        let requests: Vec<ResourceRequest> = spec.variants.iter().map(|v| v.request()).collect();
        if requests.iter().any(ResourceRequest::is_empty) {
            return Ok(());
        }
        let pools = self.offered_pools();
        if requests
            .iter()
            .any(|r| pools.iter().any(|(_, p)| p.could_grant(r)))
        {
            return Ok(());
        }
        let mut seen = BTreeSet::new();
        let offers: Vec<String> = pools
            .iter()
            .map(|(name, p)| describe(name, p.offer()))
            .filter(|d| seen.insert(d.clone()))
            .collect();
        let offered = if offers.is_empty() {
            "no platform is configured with a profile and no agent is registered".into()
        } else {
            format!("platforms offer: {}", offers.join("; "))
        };
        Err(bad(
            "variants",
            format!("no platform offers what any variant asks for ({offered})"),
        ))
    }

    /// Refuses an application a task of which asks for GPUs or named counts that no
    /// configured platform's profile and no registered agent could ever grant.
    pub(super) fn check_resources(&self, spec: &AppSpec) -> Result<(), ServiceError> {
        if !spec.variants.is_empty() {
            return self.check_variants(spec);
        }
        let app = spec
            .resource_request()
            .map_err(|e| ServiceError::BadRequest(e.to_string()))?;
        let mut requests: BTreeSet<Vec<(String, u64)>> = BTreeSet::new();
        let mut distinct = Vec::new();
        let tasks = spec.dag.iter().flat_map(|d| d.tasks.iter());
        for request in std::iter::once(app.clone()).chain(tasks.map(|t| t.resource_request(&app))) {
            let key = request
                .0
                .iter()
                .map(|(n, a)| (n.clone(), a.units()))
                .collect();
            if !request.is_empty() && requests.insert(key) {
                distinct.push(request);
            }
        }
        if distinct.is_empty() {
            return Ok(());
        }
        let pools = self.offered_pools();
        for request in &distinct {
            if pools.iter().any(|(_, p)| p.could_grant(request)) {
                continue;
            }
            // Each platform's profile and each distinct agent offer, once.
            let mut seen = BTreeSet::new();
            let offers: Vec<String> = pools
                .iter()
                .map(|(name, p)| describe(name, p.offer()))
                .filter(|d| seen.insert(d.clone()))
                .collect();
            let asked: Vec<String> = request.0.iter().map(|(n, a)| format!("{n} {a}")).collect();
            let offered = if offers.is_empty() {
                "no platform is configured with a profile and no agent is registered".into()
            } else {
                format!("platforms offer: {}", offers.join("; "))
            };
            return Err(bad(
                &field_of(request, &pools),
                format!(
                    "a task asks for {}, more than any platform offers ({offered})",
                    asked.join(", ")
                ),
            ));
        }
        Ok(())
    }
}
