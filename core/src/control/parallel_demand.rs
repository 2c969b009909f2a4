//! Pilot demand of a parallel application (`nodes` / `procs`): one run spans agents of one
//! platform (see `queue::group_reserve`), so splitting its demand by the first level's
//! core shares would ask for part of a run on each platform, or for it on a platform
//! that can never hold it. Its waiting runs ask, whole, for pilots on one platform that
//! can hold a run at the capacity it may reach: the platform the live round's placement
//! chose, else the one the capacity round's placement chose, else the first (by name)
//! offering nothing but cores, else the first. A run asks for whole nodes there: the
//! nodes its members take times their cores, so the provisioner's pilots (of
//! `nodes_per_pilot` nodes each, several when one is too small) bring enough agents.
//!
//! All of one application's waiting runs ask on that one platform: the round's allocator
//! places an application's next run only (the runs behind it are its look-ahead's waiting
//! jobs, which it does not place), and they are alike, so it sends the next ones where it
//! sent this one until a round finds no room there; that round places the run elsewhere
//! (where it can start now), and the demand follows it. Splitting the runs over platforms
//! here would ask for pilots where no placement sends work.
//!
//! A workflow's ready parallel tasks ask the same way, at the size of the first (the one
//! its reservation is made for); its other ready tasks ask as any application's do.

use super::provision_demand::{capacity_agents, Capacity};
use super::scheduling::LiveAgent;
use crate::queue::choose_members;
use hetpilot_protocol::parallel::ParallelSize;
use std::collections::BTreeMap;

/// The platform a parallel application's waiting runs ask pilots of, and the cores they
/// ask there (`None`: no platform can hold a run, even grown to its capacity).
/// `platforms` are the round's platform names in order, `agents` every platform grown to
/// its capacity (`provision_demand::capacity_agents`), `preferred` the placements to
/// follow first.
pub(crate) fn parallel_demand<'a>(
    size: ParallelSize,
    waiting: u64,
    platforms: impl IntoIterator<Item = &'a str>,
    agents: &[LiveAgent],
    capacities: &BTreeMap<String, Capacity>,
    preferred: [Option<&str>; 2],
) -> Option<(String, u64)> {
    let plain = |p: &str| capacities.get(p).is_none_or(|c| c.resources.is_empty());
    let mut names: Vec<&str> = platforms.into_iter().collect();
    // A stable sort: the placements first, then the plain platforms, each in name order.
    names.sort_by_key(|p| {
        let rank = preferred.iter().position(|q| *q == Some(*p));
        (rank.unwrap_or(preferred.len()), !plain(p))
    });
    names.into_iter().find_map(|p| {
        run_cores(size, p, agents).map(|cores| (p.to_string(), cores.saturating_mul(waiting)))
    })
}

/// The cores of the whole nodes one run of `size` takes on `platform` grown to its
/// capacity (`agents`: its active agents; the nodes a provisioning round sees, see
/// `provision_demand::capacity_agents`), for the demand asked before any provisioning
/// round or without one; `None`: it cannot hold a run.
pub(crate) fn run_cores_at_capacity(
    size: ParallelSize,
    platform: &str,
    agents: &[LiveAgent],
    capacities: &BTreeMap<String, Capacity>,
) -> Option<u64> {
    let own: BTreeMap<String, Capacity> = capacities
        .get(platform)
        .map(|c| (platform.to_string(), c.clone()))
        .into_iter()
        .collect();
    let mine: Vec<LiveAgent> = agents
        .iter()
        .filter(|a| a.platform == platform)
        .cloned()
        .collect();
    run_cores(size, platform, &capacity_agents(&mine, &own))
}

/// The cores of the whole nodes one run of `size` takes on `platform`'s agents (`None`:
/// they cannot hold it), the largest nodes first.
fn run_cores(size: ParallelSize, platform: &str, agents: &[LiveAgent]) -> Option<u64> {
    let mut nodes: Vec<(hetpilot_protocol::AgentId, u32)> = agents
        .iter()
        .filter(|a| a.platform == platform)
        .map(|a| (a.id, a.slots))
        .collect();
    nodes.sort_by_key(|&(id, slots)| (std::cmp::Reverse(slots), id));
    let members = choose_members(size, &nodes)?;
    Some(
        members
            .iter()
            .filter_map(|(id, _)| nodes.iter().find(|(n, _)| n == id))
            .map(|&(_, slots)| u64::from(slots))
            .sum(),
    )
}
