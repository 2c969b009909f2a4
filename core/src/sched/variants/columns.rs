//! The columns of the variant first level: one per (platform, variant kind) that some
//! active application can run on, each with a standard task slot and a capacity in slots.
//!
//! On a GPU platform the GPU column and the CPU column share the nodes' cores: each GPU
//! slot holds its cores, and the CPU column gets the cores left over. GPU slots are laid
//! out first (the GPUs are the scarce resource); the plan gives back the cores of GPU slots
//! nobody was allocated.

use std::fmt;

use hetpilot_protocol::resources::ResourceAmount;

use super::model::{VariantApplication, VariantPlatform};

/// Which resources a variant's tasks take besides cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VariantKind {
    /// Cores only.
    Cpu,
    /// GPUs (whole or a share) and cores.
    Gpu,
}

impl fmt::Display for VariantKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
        })
    }
}

/// One column of the affinity tables: a platform and a kind of variant on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// Index of the platform in the snapshot.
    pub platform: usize,
    /// Which variants run in it.
    pub kind: VariantKind,
    /// Cores of one slot: the most any application's variant of this kind asks for here.
    pub slot_cores: u32,
    /// GPUs of one slot (0 in a CPU column), likewise the largest request.
    pub slot_gpus: ResourceAmount,
}

/// The variant of `kind` of `app` if it fits on a node of `platform`, by index.
pub(crate) fn variant_on(
    app: &VariantApplication,
    platform: &VariantPlatform,
    kind: VariantKind,
) -> Option<usize> {
    app.variants
        .iter()
        .position(|v| v.kind() == kind && v.fits(platform))
}

/// The columns for the `active` applications: GPU before CPU on each platform, platforms
/// in snapshot order; a column exists where some active application can run.
pub(crate) fn columns(
    platforms: &[VariantPlatform],
    applications: &[VariantApplication],
    active: &[usize],
) -> Vec<Column> {
    let mut out = Vec::new();
    for (p, platform) in platforms.iter().enumerate() {
        if platform.nodes == 0 {
            continue;
        }
        for kind in [VariantKind::Gpu, VariantKind::Cpu] {
            let requests: Vec<(u32, ResourceAmount)> = active
                .iter()
                .filter_map(|&a| {
                    let app = &applications[a];
                    variant_on(app, platform, kind).map(|v| {
                        let v = &app.variants[v];
                        (v.cores, v.gpus)
                    })
                })
                .collect();
            if let (Some(cores), Some(gpus)) = (
                requests.iter().map(|r| r.0).max(),
                requests.iter().map(|r| r.1).max(),
            ) {
                out.push(Column {
                    platform: p,
                    kind,
                    slot_cores: cores,
                    slot_gpus: gpus,
                });
            }
        }
    }
    out
}

/// GPU slots one node of `platform` holds in a GPU column.
fn gpu_slots_per_node(platform: &VariantPlatform, column: &Column) -> u64 {
    let units = u64::from(platform.gpus_per_node).saturating_mul(ResourceAmount::UNIT);
    let by_gpus = units / column.slot_gpus.units().max(1);
    by_gpus.min(u64::from(platform.cores_per_node) / u64::from(column.slot_cores.max(1)))
}

/// Each column's capacity in task slots. `gpu_slots_held[p]`, where given, is how many GPU
/// slots of platform `p` hold their cores (all of them when `None`), spread as evenly over
/// the nodes as they go; the CPU column gets each node's remaining cores.
pub(crate) fn capacities(
    platforms: &[VariantPlatform],
    columns: &[Column],
    gpu_slots_held: &[Option<u64>],
) -> Vec<u64> {
    columns
        .iter()
        .map(|c| {
            let platform = &platforms[c.platform];
            let nodes = u64::from(platform.nodes);
            let gpu_column = columns
                .iter()
                .find(|g| g.platform == c.platform && g.kind == VariantKind::Gpu);
            let full = gpu_column.map_or(0, |g| gpu_slots_per_node(platform, g) * nodes);
            let held = gpu_slots_held[c.platform].unwrap_or(full).min(full);
            match c.kind {
                VariantKind::Gpu => held,
                VariantKind::Cpu => {
                    let gpu_cores = gpu_column.map_or(0, |g| u64::from(g.slot_cores));
                    let cores = u64::from(platform.cores_per_node);
                    let per = u64::from(c.slot_cores.max(1));
                    let base = held.checked_div(nodes).unwrap_or(0);
                    let extra = held.checked_rem(nodes).unwrap_or(0);
                    let left = |gpu_slots: u64| {
                        cores.saturating_sub(gpu_slots.saturating_mul(gpu_cores)) / per
                    };
                    left(base + 1) * extra + left(base) * (nodes - extra)
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_node() -> VariantPlatform {
        VariantPlatform {
            name: "gpu".into(),
            nodes: 2,
            cores_per_node: 32,
            gpus_per_node: 4,
        }
    }

    #[test]
    fn gpu_slots_hold_their_cores_and_give_them_back_when_unused() {
        let columns = [
            Column {
                platform: 0,
                kind: VariantKind::Gpu,
                slot_cores: 2,
                slot_gpus: ResourceAmount::whole(1).unwrap(),
            },
            Column {
                platform: 0,
                kind: VariantKind::Cpu,
                slot_cores: 8,
                slot_gpus: ResourceAmount::default(),
            },
        ];
        let platforms = [gpu_node()];
        // 4 GPU slots per node take 8 of 32 cores: 3 CPU slots of 8 are left per node.
        assert_eq!(capacities(&platforms, &columns, &[None]), vec![8, 6]);
        // One GPU slot held in all: one node keeps 30 cores (3 slots), the other 32 (4).
        assert_eq!(capacities(&platforms, &columns, &[Some(1)]), vec![1, 7]);
        assert_eq!(capacities(&platforms, &columns, &[Some(0)]), vec![0, 8]);
        // A quarter GPU per task: 16 slots per node by GPUs, 16 by cores.
        let shared = [Column {
            slot_gpus: ResourceAmount::parse(0.25).unwrap(),
            ..columns[0]
        }];
        assert_eq!(capacities(&platforms, &shared, &[None]), vec![32]);
    }
}
