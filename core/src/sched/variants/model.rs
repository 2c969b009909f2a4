//! What the variant scheduler is told: platforms with cores and GPUs per node, and
//! applications with their variants and each variant's measured runtime per platform.

use hetpilot_protocol::resources::ResourceAmount;

use super::columns::VariantKind;
use crate::sched::error::SchedError;

/// The most variants one application may declare.
pub const MAX_VARIANTS: usize = 8;

/// One way to run an application's tasks: what one task takes on a node.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The name the application gave it (`gpu`, `cpu`).
    pub name: String,
    /// Cores one task takes (at least 1).
    pub cores: u32,
    /// GPUs one task takes: 0 for a CPU variant, a share of one device below 1, or whole
    /// devices.
    pub gpus: ResourceAmount,
}

impl Variant {
    /// Whether it needs GPUs.
    pub fn kind(&self) -> VariantKind {
        if self.gpus.is_zero() {
            VariantKind::Cpu
        } else {
            VariantKind::Gpu
        }
    }

    /// Whether one task of it fits on one node of `platform`.
    pub fn fits(&self, platform: &VariantPlatform) -> bool {
        let gpus_per_node = ResourceAmount::whole(u64::from(platform.gpus_per_node));
        self.cores <= platform.cores_per_node && gpus_per_node.is_some_and(|have| self.gpus <= have)
    }
}

/// A platform as the variant scheduler sees it: identical nodes with cores and GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantPlatform {
    /// Its name (for tables).
    pub name: String,
    /// Nodes the system may use now.
    pub nodes: u32,
    /// Cores per node.
    pub cores_per_node: u32,
    /// GPUs per node (0 on a CPU platform).
    pub gpus_per_node: u32,
}

/// An application with tasks to run and its variants, in declaration order.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantApplication {
    /// Its name (for tables).
    pub name: String,
    /// Its variants, in the order it declared them; at most one of each kind.
    pub variants: Vec<Variant>,
    /// `runtime_s[v][p]`: mean seconds of one task of variant `v` on platform `p`, as
    /// measured online (or the profile's estimate before any measurement).
    pub runtime_s: Vec<Vec<f64>>,
    /// Tasks still waiting in its queue.
    pub remaining_tasks: u64,
    /// Tasks it has finished.
    pub completed_tasks: u64,
    /// Seconds since it was submitted.
    pub age_s: f64,
    /// Its owner's weight (relative entitlement).
    pub weight: f64,
}

/// Everything one variant scheduling round needs.
#[derive(Debug, Clone, Copy)]
pub struct VariantSnapshot<'a> {
    /// The platforms, in a fixed order.
    pub platforms: &'a [VariantPlatform],
    /// The applications, in a fixed order.
    pub applications: &'a [VariantApplication],
}

impl VariantSnapshot<'_> {
    /// Checks shapes and values; the scheduler may assume a validated snapshot.
    pub fn validate(&self) -> Result<(), SchedError> {
        let invalid =
            |field: String, problem: String| SchedError::InvalidSnapshot { field, problem };
        for (i, a) in self.applications.iter().enumerate() {
            if a.variants.is_empty() || a.variants.len() > MAX_VARIANTS {
                return Err(invalid(
                    format!("applications[{i}].variants"),
                    format!(
                        "declare 1 to {MAX_VARIANTS} variants, got {}",
                        a.variants.len()
                    ),
                ));
            }
            for kind in [VariantKind::Cpu, VariantKind::Gpu] {
                if a.variants.iter().filter(|v| v.kind() == kind).count() > 1 {
                    return Err(invalid(
                        format!("applications[{i}].variants"),
                        format!("at most one {kind} variant per application"),
                    ));
                }
            }
            for (v, variant) in a.variants.iter().enumerate() {
                if variant.cores == 0 {
                    return Err(invalid(
                        format!("applications[{i}].variants[{v}].cores"),
                        "a task takes at least 1 core".into(),
                    ));
                }
            }
            if a.runtime_s.len() != a.variants.len()
                || a.runtime_s.iter().any(|r| r.len() != self.platforms.len())
            {
                return Err(invalid(
                    format!("applications[{i}].runtime_s"),
                    "shape differs from variants × platforms".into(),
                ));
            }
            for (v, row) in a.runtime_s.iter().enumerate() {
                for (p, &r) in row.iter().enumerate() {
                    if !(r.is_finite() && r > 0.0) {
                        return Err(invalid(
                            format!("applications[{i}].runtime_s[{v}][{p}]"),
                            format!("must be a positive number of seconds, got {r}"),
                        ));
                    }
                }
            }
            if !(a.age_s.is_finite() && a.age_s >= 0.0) {
                return Err(invalid(
                    format!("applications[{i}].age_s"),
                    format!("must be a non-negative number of seconds, got {}", a.age_s),
                ));
            }
            if !(a.weight.is_finite() && a.weight > 0.0) {
                return Err(invalid(
                    format!("applications[{i}].weight"),
                    format!("must be a positive number, got {}", a.weight),
                ));
            }
        }
        Ok(())
    }
}
