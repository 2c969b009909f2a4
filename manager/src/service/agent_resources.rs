//! An agent's GPUs and named counts as the agents list shows them: each device with the
//! share its runs were granted and how many runs share it, each named count offered and in
//! use, read from the agent's lease pool and the grants of the runs it holds.

use crate::queue::AgentEntry;
use hetpilot_protocol::agent_resources::{AgentGpu, AgentResource};

/// The GPUs of `agent`, lowest index first, with their use.
pub(super) fn gpus(agent: &AgentEntry) -> Vec<AgentGpu> {
    let pool = agent.pool();
    let grants: Vec<_> = agent.held.keys().filter_map(|t| agent.grant(*t)).collect();
    let mut gpus: Vec<AgentGpu> = pool
        .offer()
        .gpus
        .iter()
        .map(|device| {
            let in_use = pool
                .gpu_use()
                .find(|(index, _)| *index == device.index)
                .map_or(0.0, |(_, used)| used.as_f64());
            let tasks = grants
                .iter()
                .filter(|g| {
                    g.gpus
                        .iter()
                        .any(|s| s.index == device.index && s.uuid == device.uuid)
                })
                .count() as u64;
            AgentGpu {
                device: device.clone(),
                in_use,
                tasks,
            }
        })
        .collect();
    gpus.sort_by_key(|g| g.device.index);
    gpus
}

/// The named counts of `agent`, by name, offered and in use.
pub(super) fn named(agent: &AgentEntry) -> Vec<AgentResource> {
    let pool = agent.pool();
    pool.offer()
        .named
        .iter()
        .map(|(name, offered)| AgentResource {
            name: name.clone(),
            offered: offered.as_f64(),
            in_use: pool.named_use(name).as_f64(),
        })
        .collect()
}
