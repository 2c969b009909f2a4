//! The lease plan: what the last scheduling round wants each agent's slots to run. The
//! queues keep one and consult it on every lease (a couple of map lookups per batch); the
//! round that builds it runs elsewhere, never inside a pull.

use hetpilot_protocol::{AgentId, AppId};
use std::collections::HashMap;

/// Per agent and per platform preferences; applications absent from it are still served
/// when nothing planned can use a slot (work conservation).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LeasePlan {
    /// Second level: the slots of each agent (its node's co-runner combination), as
    /// (application, slots) already scaled to the agent's slot count.
    pub(crate) agents: HashMap<AgentId, Vec<(AppId, u32)>>,
    /// First level, per platform name.
    pub(crate) platforms: HashMap<String, PlatformPlan>,
    /// The platform TLPA chose for each multi-core application: its tasks go nowhere else.
    pub(crate) parallel: HashMap<AppId, String>,
    /// The workflow policy's plan of each competing workflow (see `ptg::live`).
    pub(crate) workflows: HashMap<AppId, std::sync::Arc<crate::ptg::live::WorkflowPlan>>,
    /// The variant round's choices for applications with variants.
    pub(crate) variants: super::variant_lease::VariantLeasePlan,
    /// The second level on shared GPUs: where fractions of a device go.
    pub(crate) devices: super::device_choice::DevicePlan,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PlatformPlan {
    /// Applications with cores on this platform, largest share first.
    pub(crate) order: Vec<AppId>,
    /// Tasks still to send here so that each application gets measured on this platform.
    pub(crate) explore: Vec<(AppId, u32)>,
}

/// How many tasks (counted in slots) of each planned application `agent` should receive
/// now so that what it holds follows the plan's proportions: `targets` are the planned
/// slots, `held` the slots its current tasks take, `free` what it asks for.
pub(crate) fn wanted(
    targets: &[(AppId, u32)],
    held: &HashMap<AppId, u32>,
    free: u32,
) -> Vec<(AppId, u32)> {
    let planned: u64 = targets.iter().map(|&(_, s)| u64::from(s)).sum();
    if planned == 0 {
        return Vec::new();
    }
    let total = u64::from(free) + held.values().map(|&s| u64::from(s)).sum::<u64>();
    targets
        .iter()
        .map(|&(app, slots)| {
            let goal = (u64::from(slots) * total + planned / 2) / planned;
            let have = u64::from(held.get(&app).copied().unwrap_or(0));
            (app, goal.saturating_sub(have).min(u64::from(free)) as u32)
        })
        .filter(|&(_, w)| w > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wanted_follows_proportions_including_prefetch() {
        let (a, b) = (AppId(1), AppId(2));
        // 1 slot of a, 3 of b; the agent holds one a and asks for 7 more: 8 in all.
        let held = HashMap::from([(a, 1)]);
        assert_eq!(wanted(&[(a, 1), (b, 3)], &held, 7), vec![(a, 1), (b, 6)]);
        // Already over its share: nothing more of a.
        let held = HashMap::from([(a, 4)]);
        assert_eq!(wanted(&[(a, 1), (b, 3)], &held, 4), vec![(b, 4)]);
        assert!(wanted(&[], &held, 4).is_empty());
    }
}
