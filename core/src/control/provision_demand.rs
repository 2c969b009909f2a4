//! What the provisioner asks each platform for: the waiting work split by the two-level
//! scheduler's shares, so pilots go where the scheduler would run the work and every platform keeps the right
//! number of pilots for the share of the work the first level gives it.
//!
//! A planner of its own runs a round over every platform at the capacity it may reach:
//! a profiled platform as `max_running` pilots of `cores_per_node` slots (or the agents it
//! has, if more), a platform without a profile as the agents it has. Each application's
//! waiting cores are then divided among the platforms in proportion to the cores the round
//! gives it there. An application the round gives nothing (every core taken by others)
//! counts on every platform, so no work waits for want of a pilot; so does an application
//! with variants, on each platform one of its variants fits. A parallel application's
//! runs ask, whole, on one platform that can hold them instead (see
//! `control::parallel_demand`). Without a scheduler
//! (`policy = "round-robin"`) or without profiles, every platform sees all the waiting work.

use super::parallel_demand::parallel_demand;
use super::profiling::RunStats;
use super::resource_fit::{eligible_platforms, NodeResources};
use super::scheduling::{LiveAgent, LiveApp, Planner, RoundError};
use hetpilot_protocol::resources::ResourceRequest;
use hetpilot_protocol::{AgentId, AppId};
use std::collections::{BTreeMap, HashMap};

/// How far a profiled platform can grow.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Capacity {
    /// Pilots at once (`max_running`); each pilot is one node.
    pub nodes: u32,
    /// Cores of each node.
    pub cores_per_node: u32,
    /// What each node offers besides cores (GPUs, named counts).
    #[serde(default, skip_serializing_if = "NodeResources::is_empty")]
    pub resources: NodeResources,
}

/// The agents a provisioning round sees: real agents of platforms without a profile,
/// and each profiled platform grown to its capacity with idle nodes (ids past any real
/// agent's; they only exist inside the round).
pub(crate) fn capacity_agents(
    agents: &[LiveAgent],
    capacities: &BTreeMap<String, Capacity>,
) -> Vec<LiveAgent> {
    let mut out: Vec<LiveAgent> = agents
        .iter()
        .filter(|a| !capacities.contains_key(&a.platform))
        .cloned()
        .collect();
    let mut next_id = u64::MAX;
    for (platform, cap) in capacities {
        let real = agents.iter().filter(|a| a.platform == *platform).count() as u32;
        for _ in 0..cap.nodes.max(real) {
            out.push(LiveAgent {
                id: AgentId(next_id),
                platform: platform.clone(),
                slots: cap.cores_per_node,
                held: Vec::new(),
            });
            next_id -= 1;
        }
    }
    out
}

/// Waiting cores per platform and owner.
pub(crate) type Demand = HashMap<String, BTreeMap<String, u64>>;

/// What each application's tasks request besides cores (absent: nothing, a CPU-only
/// application).
pub(crate) type Requests = HashMap<AppId, ResourceRequest>;

/// The cores and request of each variant of the applications that declare variants: their
/// work may go to any platform some variant fits.
pub(crate) type VariantRequests = HashMap<AppId, Vec<(u32, ResourceRequest)>>;

/// Waiting cores per platform (and, within it, per owner, for per-user pilots): each
/// application's waiting cores split in proportion to the cores a capacity round gives it
/// on each platform its request fits ([`eligible_platforms`]: GPU work where the nodes
/// have the GPUs, CPU-only work off GPU platforms while a CPU platform can take it).
/// An application with variants is not split: the capacity round sees it as 1-core CPU
/// work and would put it all on CPU nodes while it fits there, whereas which variant each
/// task runs as is decided at lease time among the pilots there are. So its waiting tasks
/// count on every platform one of its variants fits, at that variant's cores. A parallel
/// application's runs go on one platform that holds them, `placed` (the live round's
/// placement) first.
#[allow(clippy::too_many_arguments)]
pub(crate) fn demand_by_platform(
    planner: &mut Planner,
    stats: &RunStats,
    apps: &[LiveApp],
    agents: &[LiveAgent],
    capacities: &BTreeMap<String, Capacity>,
    requests: &Requests,
    variants: &VariantRequests,
    weights: &HashMap<String, f64>,
    placed: &HashMap<AppId, String>,
    now_ms: u64,
) -> Result<Demand, RoundError> {
    let mut demand = Demand::new();
    let waiting: Vec<&LiveApp> = apps.iter().filter(|a| a.waiting > 0).collect();
    if waiting.is_empty() || agents.is_empty() {
        return Ok(demand);
    }
    let round = planner.round(stats, apps, agents, weights, now_ms)?;
    let (view, at_capacity) = (round.view, round.plan.parallel);
    let cpu_only = ResourceRequest::default();
    for app in waiting {
        let mut add = |platform: &str, cores: u64| {
            *demand
                .entry(platform.to_string())
                .or_default()
                .entry(app.owner.clone())
                .or_insert(0) += cores;
        };
        let mut waiting = app.waiting;
        if let Some(runs) = app.parallel {
            let names = view.platforms.iter().map(|p| p.name.as_str());
            let preferred = [placed, &at_capacity].map(|m| m.get(&app.id).map(String::as_str));
            if let Some((platform, cores)) = parallel_demand(
                runs.size,
                runs.waiting,
                names,
                agents,
                capacities,
                preferred,
            ) {
                add(&platform, cores);
            }
            // A workflow's other ready tasks ask as any application's do.
            waiting = waiting.saturating_sub(runs.waiting);
            if waiting == 0 {
                continue;
            }
        }
        if let Some(variants) = variants.get(&app.id) {
            let names = view.platforms.iter().map(|p| p.name.as_str());
            for (platform, cores) in variant_cores(names, capacities, variants) {
                add(&platform, waiting.saturating_mul(u64::from(cores)));
            }
            continue;
        }
        let cores = waiting.saturating_mul(u64::from(app.cores.max(1)));
        let request = requests.get(&app.id).unwrap_or(&cpu_only);
        let names = view.platforms.iter().map(|p| p.name.as_str());
        let eligible = eligible_platforms(names, capacities, app.cores, request);
        let given = view.apps.iter().find(|a| a.app == app.id);
        let given_on = |j: usize| given.map_or(0, |g| u64::from(g.cores[j]));
        let total: u64 = (0..view.platforms.len())
            .filter(|&j| eligible.contains(&view.platforms[j].name))
            .map(given_on)
            .sum();
        for (j, platform) in view.platforms.iter().enumerate() {
            if !eligible.contains(&platform.name) {
                continue;
            }
            let share = if total > 0 {
                (cores * given_on(j)).div_ceil(total)
            } else {
                cores
            };
            add(&platform.name, share);
        }
    }
    Ok(demand)
}

/// The platforms, among `platforms`, where one of an application's `variants` (cores,
/// request) fits ([`eligible_platforms`]), each with the cores a task takes there: the
/// widest variant that fits it.
fn variant_cores<'a>(
    platforms: impl IntoIterator<Item = &'a str> + Clone,
    capacities: &BTreeMap<String, Capacity>,
    variants: &[(u32, ResourceRequest)],
) -> BTreeMap<String, u32> {
    let mut cores_on = BTreeMap::new();
    for (cores, request) in variants {
        for platform in eligible_platforms(platforms.clone(), capacities, *cores, request) {
            let widest = cores_on.entry(platform).or_insert(0);
            *widest = (*widest).max((*cores).max(1));
        }
    }
    cores_on
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::scheduling::ParallelRuns;
    use crate::control::SchedulerConfig;
    use hetpilot_protocol::parallel::ParallelSize;
    use hetpilot_protocol::AppId;

    fn app(id: u64, waiting: u64, cores: u32) -> LiveApp {
        LiveApp {
            id: AppId(id),
            name: format!("app{id}"),
            owner: "alice".into(),
            waiting,
            in_flight: 0,
            done: 0,
            cores,
            parallel: None,
            submitted_ms: 0,
        }
    }

    fn planner() -> Planner {
        let config = SchedulerConfig::default();
        Planner::new(config.settings().unwrap().unwrap(), &config).unwrap()
    }

    fn capacities() -> BTreeMap<String, Capacity> {
        BTreeMap::from([
            (
                "fast".to_string(),
                Capacity {
                    nodes: 4,
                    cores_per_node: 8,
                    resources: NodeResources::default(),
                },
            ),
            (
                "slow".to_string(),
                Capacity {
                    nodes: 4,
                    cores_per_node: 8,
                    resources: NodeResources::default(),
                },
            ),
        ])
    }

    #[test]
    fn profiled_platforms_grow_to_capacity_and_others_keep_their_agents() {
        let real = [
            LiveAgent {
                id: AgentId(1),
                platform: "local".into(),
                slots: 2,
                held: Vec::new(),
            },
            LiveAgent {
                id: AgentId(2),
                platform: "fast".into(),
                slots: 8,
                held: vec![(AppId(1), 1)],
            },
        ];
        let agents = capacity_agents(&real, &capacities());
        let count = |p: &str| agents.iter().filter(|a| a.platform == p).count();
        assert_eq!((count("local"), count("fast"), count("slow")), (1, 4, 4));
        assert!(agents
            .iter()
            .all(|a| a.platform == "local" || a.held.is_empty()));
    }

    fn measured() -> RunStats {
        let mut stats = RunStats::default();
        for _ in 0..3 {
            stats.add(AppId(1), "fast", &[], 1.0);
            stats.add(AppId(1), "slow", &[], 6.0);
            stats.add(AppId(2), "fast", &[], 2.0);
            stats.add(AppId(2), "slow", &[], 2.0);
        }
        stats
    }

    /// Per platform, summed over owners.
    fn demand(stats: &RunStats, apps: &[LiveApp], agents: &[LiveAgent]) -> HashMap<String, u64> {
        demand_by_platform(
            &mut planner(),
            stats,
            apps,
            agents,
            &BTreeMap::new(),
            &Requests::new(),
            &VariantRequests::new(),
            &HashMap::new(),
            &HashMap::new(),
            1_000,
        )
        .unwrap()
        .into_iter()
        .map(|(p, by_owner)| (p, by_owner.values().sum()))
        .collect()
    }

    #[test]
    fn demand_is_split_by_owner_within_each_platform() {
        let agents = capacity_agents(&[], &capacities());
        let mut bob = app(2, 5, 2);
        bob.owner = "bob".into();
        let d = demand_by_platform(
            &mut planner(),
            &measured(),
            &[app(1, 20, 1), bob],
            &agents,
            &capacities(),
            &Requests::new(),
            &VariantRequests::new(),
            &HashMap::new(),
            &HashMap::new(),
            1_000,
        )
        .unwrap();
        let of = |user: &str| -> u64 { d.values().filter_map(|m| m.get(user)).sum() };
        assert!((20..=21).contains(&of("alice")), "{d:?}");
        assert!((10..=11).contains(&of("bob")), "{d:?}");
    }

    /// App 1 runs 6× faster on `fast`, app 2 the same on both.
    #[test]
    fn demand_follows_platform_affinity() {
        let agents = capacity_agents(&[], &capacities());
        let d = demand(&measured(), &[app(1, 20, 1)], &agents);
        assert_eq!(d["fast"], 20, "{d:?}");
        assert_eq!(d.get("slow").copied().unwrap_or(0), 0, "{d:?}");
        // Both waiting: app 1 still all on fast; app 2 wherever the round puts it.
        let d = demand(&measured(), &[app(1, 20, 1), app(2, 20, 1)], &agents);
        assert!(d["fast"] >= 20, "{d:?}");
        let total: u64 = d.values().sum();
        assert!((40..=42).contains(&total), "{d:?}");
    }

    #[test]
    fn no_waiting_work_means_no_demand_and_unplaced_apps_count_everywhere() {
        let agents = capacity_agents(&[], &capacities());
        let d = demand(&RunStats::default(), &[app(1, 0, 1)], &agents);
        assert!(d.is_empty(), "{d:?}");
        // Two 1-core nodes in all and three applications: one gets no core in the round,
        // and its waiting cores count on both platforms.
        let one = Capacity {
            nodes: 1,
            cores_per_node: 1,
            resources: NodeResources::default(),
        };
        let tiny = BTreeMap::from([("fast".to_string(), one.clone()), ("slow".to_string(), one)]);
        let apps = [app(1, 10, 1), app(2, 10, 1), app(3, 10, 1)];
        let d = demand(&RunStats::default(), &apps, &capacity_agents(&[], &tiny));
        assert_eq!(d.values().sum::<u64>(), 40, "{d:?}");
        assert!(d["fast"] >= 20 && d["slow"] >= 20, "{d:?}");
    }

    /// `cpu`: 4 nodes of 8 cores; `gpu`: 2 nodes of 4 cores and 2 GPUs.
    fn mixed() -> BTreeMap<String, Capacity> {
        let node = |nodes, cores, gpus| Capacity {
            nodes,
            cores_per_node: cores,
            resources: NodeResources {
                gpus,
                named: BTreeMap::new(),
            },
        };
        BTreeMap::from([
            ("cpu".to_string(), node(4, 8, 0)),
            ("gpu".to_string(), node(2, 4, 2)),
        ])
    }

    fn mixed_demand(apps: &[LiveApp], requests: &Requests) -> HashMap<String, u64> {
        let caps = mixed();
        let agents = capacity_agents(&[], &caps);
        demand_by_platform(
            &mut planner(),
            &RunStats::default(),
            apps,
            &agents,
            &caps,
            requests,
            &VariantRequests::new(),
            &HashMap::new(),
            &HashMap::new(),
            1_000,
        )
        .unwrap()
        .into_iter()
        .map(|(p, by_owner)| (p, by_owner.values().sum()))
        .collect()
    }

    #[test]
    fn gpu_work_asks_only_gpu_platforms_and_cpu_work_only_cpu_ones() {
        let gpus = |n: f64| {
            let amount = hetpilot_protocol::resources::ResourceAmount::parse(n).unwrap();
            ResourceRequest(BTreeMap::from([("gpus".to_string(), amount)]))
        };
        // CPU-only work alone: nothing asked of the GPU platform, though it is idle.
        let d = mixed_demand(&[app(1, 40, 1)], &Requests::new());
        assert_eq!(d.get("gpu"), None, "{d:?}");
        assert_eq!(d["cpu"], 40, "{d:?}");
        // GPU work alone: only the GPU platform, though the CPU platform is larger.
        let d = mixed_demand(&[app(2, 6, 1)], &Requests::from([(AppId(2), gpus(1.0))]));
        assert_eq!(d.get("cpu"), None, "{d:?}");
        assert_eq!(d["gpu"], 6, "{d:?}");
        // Both, and a request no node fits (4 GPUs) asks nowhere.
        let requests = Requests::from([(AppId(2), gpus(0.5)), (AppId(3), gpus(4.0))]);
        let d = mixed_demand(&[app(1, 10, 1), app(2, 6, 1), app(3, 5, 1)], &requests);
        assert_eq!((d["cpu"], d["gpu"]), (10, 6), "{d:?}");
    }

    /// Two applications each with a GPU variant (1 GPU, 1 core) and a CPU variant (2
    /// cores), on a CPU platform of one 8-core node and a GPU platform of one node of 4
    /// cores and 2 GPUs (the lab's `debug` and `gpu`): as long as tasks wait, pilots are
    /// asked where each variant fits, also when the waiting tasks would fit on the CPU
    /// node alone (where a capacity round that sees 1-core CPU work puts them all), and
    /// also for an application measured to run 8x faster as its GPU variant.
    #[test]
    fn work_with_variants_asks_for_gpu_and_cpu_pilots_however_little_waits() {
        let gpus = ResourceRequest(BTreeMap::from([(
            "gpus".to_string(),
            hetpilot_protocol::resources::ResourceAmount::parse(1.0).unwrap(),
        )]));
        let node = |cores, gpus| Capacity {
            nodes: 1,
            cores_per_node: cores,
            resources: NodeResources {
                gpus,
                named: BTreeMap::new(),
            },
        };
        let caps = BTreeMap::from([
            ("debug".to_string(), node(8, 0)),
            ("gpu".to_string(), node(4, 2)),
        ]);
        let each = vec![(1, gpus), (2, ResourceRequest::default())];
        let variants = VariantRequests::from([(AppId(1), each.clone()), (AppId(2), each)]);
        let mut gains = RunStats::default();
        for _ in 0..3 {
            gains.add(AppId(2), "gpu", &[], 1.0);
            gains.add(AppId(2), "debug", &[], 8.0);
        }
        let cases = [
            (RunStats::default(), [3, 3]),
            (RunStats::default(), [30, 30]),
            (gains, [0, 5]),
        ];
        for (stats, [first, second]) in cases {
            let d = demand_by_platform(
                &mut planner(),
                &stats,
                &[app(1, first, 1), app(2, second, 1)],
                &capacity_agents(&[], &caps),
                &caps,
                &Requests::new(),
                &variants,
                &HashMap::new(),
                &HashMap::new(),
                1_000,
            )
            .unwrap();
            let on = |p: &str| {
                d.get(p)
                    .map_or(0, |by_owner| by_owner.values().sum::<u64>())
            };
            let tasks = first + second;
            // Each waiting task as the GPU variant (1 core) on `gpu`, as the CPU variant
            // (2 cores) on `debug`.
            assert_eq!(on("gpu"), tasks, "{first}+{second} waiting: {d:?}");
            assert_eq!(on("debug"), 2 * tasks, "{first}+{second} waiting: {d:?}");
        }
    }

    /// The lab's two Slurm platforms: `debug`, one 8-core node; `small`, one pilot of two
    /// 2-core nodes.
    fn lab() -> BTreeMap<String, Capacity> {
        let node = |nodes, cores| Capacity {
            nodes,
            cores_per_node: cores,
            resources: NodeResources::default(),
        };
        BTreeMap::from([
            ("debug".to_string(), node(1, 8)),
            ("small".to_string(), node(2, 2)),
        ])
    }

    fn lab_demand(apps: &[LiveApp], placed: &[(u64, &str)]) -> HashMap<String, u64> {
        let placed = placed
            .iter()
            .map(|&(app, p)| (AppId(app), p.to_string()))
            .collect();
        demand_by_platform(
            &mut planner(),
            &RunStats::default(),
            apps,
            &capacity_agents(&[], &lab()),
            &lab(),
            &Requests::new(),
            &VariantRequests::new(),
            &HashMap::new(),
            &placed,
            1_000,
        )
        .unwrap()
        .into_iter()
        .map(|(p, by_owner)| (p, by_owner.values().sum()))
        .collect()
    }

    fn parallel(id: u64, waiting: u64, size: ParallelSize) -> LiveApp {
        LiveApp {
            parallel: Some(ParallelRuns { size, waiting }),
            ..app(id, waiting, 1)
        }
    }

    #[test]
    fn parallel_runs_ask_for_pilots_whole_on_a_platform_that_holds_them() {
        // Two nodes: only small's pilot has them, and a run takes both (2 x 2 cores), though
        // debug has the larger share of cores.
        let d = lab_demand(&[parallel(1, 1, ParallelSize::Nodes(2))], &[]);
        assert_eq!(d, HashMap::from([("small".to_string(), 4)]), "nodes = 2");
        // 3 procs fit either: the live round's placement decides, whole runs of whole nodes.
        let procs = [parallel(1, 2, ParallelSize::Procs(3))];
        let d = lab_demand(&procs, &[(1, "small")]);
        assert_eq!(
            d,
            HashMap::from([("small".to_string(), 8)]),
            "placed on small"
        );
        let d = lab_demand(&procs, &[(1, "debug")]);
        assert_eq!(
            d,
            HashMap::from([("debug".to_string(), 16)]),
            "placed on debug"
        );
        // Wider than any platform grows: nothing asked anywhere.
        let d = lab_demand(&[parallel(1, 1, ParallelSize::Procs(9))], &[]);
        assert!(d.is_empty(), "{d:?}");
    }
}
