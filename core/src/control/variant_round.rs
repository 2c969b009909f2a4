//! The variant round: when an application with waiting tasks declares more than one
//! variant (a GPU one and a CPU one), the round also runs the variant first level
//! ([`VariantScheduler`]) over every application with waiting tasks, each (platform,
//! variant kind) a column, and turns its plan into the queues' [`VariantLeasePlan`]: per
//! application and platform the variants its tasks run as there and how many of each one
//! agent may hold. Runtimes are measured online per (application, platform, variant);
//! a pair not measured yet gets the live profile's prior with the (application, variant)
//! as the application (`RunStats::variant_runtimes`) and a few exploration tasks, so
//! measurements, not declaration order, decide. Without such an application nothing here
//! runs and leases are decided as before.

use super::profiling::{RoundPlatform, RunStats};
use super::scheduling::{LiveAgent, LiveApp, RoundError};
use crate::queue::{AgentState, AppEntry, Queues, VariantLeasePlan, VariantQuota};
use crate::sched::variants::{
    Variant, VariantApplication, VariantPlatform, VariantScheduler, VariantSnapshot,
};
use hetpilot_protocol::views::VariantAllocation;
use hetpilot_protocol::{AgentId, AppId};
use rand::RngCore;
use std::collections::{BTreeMap, HashMap};

/// What a variant round reads of the queues besides a round's applications and agents.
#[derive(Debug, Default)]
pub(crate) struct LiveVariants {
    /// Each application with waiting tasks and its variants; one made of its cores and
    /// GPUs for an application that declares none. Empty: no variant round.
    shapes: HashMap<AppId, Vec<Variant>>,
    /// Which applications declared their variants (the others' plans are not leased by).
    declared: Vec<AppId>,
    /// GPUs each active agent offers.
    gpus: HashMap<AgentId, u32>,
    /// Tasks leased or running per (application, platform, variant index).
    in_flight: HashMap<(AppId, String, usize), u64>,
}

/// The variants of `app` as the variant first level sees them.
fn shapes_of(app: &AppEntry) -> Vec<Variant> {
    if app.variants.is_empty() {
        return vec![Variant {
            name: String::new(),
            cores: app.runtime.cores.max(1),
            gpus: app.request.gpus(),
        }];
    }
    app.variants
        .iter()
        .map(|v| Variant {
            name: v.name.clone(),
            cores: v.cores,
            gpus: v.request.gpus(),
        })
        .collect()
}

/// What a variant round reads of `queues`; empty (no variant round) unless an
/// application with waiting tasks declares more than one variant.
pub(super) fn live_variants(queues: &Queues) -> LiveVariants {
    let apps: Vec<&AppEntry> = queues
        .apps()
        .filter(|a| !a.cancelled && a.ready_count() > 0)
        .collect();
    if !apps.iter().any(|a| a.variants.len() > 1) {
        return LiveVariants::default();
    }
    let mut live = LiveVariants {
        shapes: apps.iter().map(|a| (a.id, shapes_of(a))).collect(),
        declared: apps
            .iter()
            .filter(|a| !a.variants.is_empty())
            .map(|a| a.id)
            .collect(),
        ..LiveVariants::default()
    };
    for agent in queues.agents().filter(|a| a.state == AgentState::Active) {
        let gpus = u32::try_from(agent.pool().offer().gpus.len()).unwrap_or(u32::MAX);
        live.gpus.insert(agent.id, gpus);
        for task in agent.held.keys() {
            let variant = queues
                .app(task.app)
                .and_then(|a| a.task(task.index))
                .and_then(|s| s.variant);
            if let Some(v) = variant {
                let key = (task.app, agent.platform.clone(), usize::from(v));
                *live.in_flight.entry(key).or_insert(0) += 1;
            }
        }
    }
    live
}

/// What the variant round needs besides [`LiveVariants`].
pub(super) struct VariantRoundInput<'a> {
    pub(super) stats: &'a RunStats,
    pub(super) apps: &'a [LiveApp],
    pub(super) agents: &'a [LiveAgent],
    pub(super) weights: &'a HashMap<String, f64>,
    pub(super) explore_samples: u32,
    pub(super) now_ms: u64,
}

/// What a variant round decided: the queues' plan, and the rows `hetpilot schedule` shows
/// of it (the variant of each application on each platform, with its cores and GPUs).
#[derive(Debug)]
pub(crate) struct VariantRound {
    pub(crate) plan: VariantLeasePlan,
    pub(crate) view: Vec<VariantAllocation>,
}

/// One variant round: `None` when `live` is empty (no application declares variants).
pub(super) fn plan(
    scheduler: &VariantScheduler,
    input: &VariantRoundInput<'_>,
    live: &LiveVariants,
    rng: &mut dyn RngCore,
) -> Result<Option<VariantRound>, RoundError> {
    if live.shapes.is_empty() {
        return Ok(None);
    }
    let apps: Vec<&LiveApp> = input
        .apps
        .iter()
        .filter(|a| a.waiting > 0 && live.shapes.contains_key(&a.id))
        .collect();
    let mut by_platform: BTreeMap<&str, Vec<&LiveAgent>> = BTreeMap::new();
    for a in input.agents {
        by_platform.entry(&a.platform).or_default().push(a);
    }
    let platforms: Vec<VariantPlatform> = by_platform
        .iter()
        .map(|(name, agents)| {
            let n = agents.len() as u64;
            let slots: u64 = agents.iter().map(|a| u64::from(a.slots)).sum();
            VariantPlatform {
                name: name.to_string(),
                nodes: u32::try_from(n).unwrap_or(u32::MAX),
                cores_per_node: u32::try_from(((slots + n / 2) / n).max(1)).unwrap_or(u32::MAX),
                // A GPU variant fits the platform when every node has its GPUs.
                gpus_per_node: agents
                    .iter()
                    .map(|a| live.gpus.get(&a.id).copied().unwrap_or(0))
                    .min()
                    .unwrap_or(0),
            }
        })
        .collect();
    let ids: Vec<AppId> = apps.iter().map(|a| a.id).collect();
    let round_platforms: Vec<RoundPlatform> = platforms
        .iter()
        .map(|p| RoundPlatform {
            name: p.name.clone(),
            cores_per_node: p.cores_per_node,
        })
        .collect();
    let prior = input.stats.profile(&ids, &round_platforms)?.runtime_s;
    let names: Vec<&str> = platforms.iter().map(|p| p.name.as_str()).collect();
    let mut apps_of: HashMap<&str, f64> = HashMap::new();
    for a in &apps {
        *apps_of.entry(a.owner.as_str()).or_insert(0.0) += 1.0;
    }
    let applications: Vec<VariantApplication> = apps
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let variants = live.shapes[&a.id].clone();
            let runtime_s = if live.declared.contains(&a.id) {
                let keys: Vec<(AppId, &str)> =
                    variants.iter().map(|v| (a.id, v.name.as_str())).collect();
                input
                    .stats
                    .variant_runtimes(&keys, &names)
                    .into_iter()
                    .map(|row| {
                        row.iter()
                            .enumerate()
                            .map(|(j, r)| r.unwrap_or(prior[i][j]))
                            .collect()
                    })
                    .collect()
            } else {
                vec![prior[i].clone()]
            };
            let owner_weight = input.weights.get(&a.owner).copied().unwrap_or(1.0);
            VariantApplication {
                name: a.name.clone(),
                variants,
                runtime_s,
                remaining_tasks: a.waiting,
                completed_tasks: a.done,
                age_s: input.now_ms.saturating_sub(a.submitted_ms) as f64 / 1000.0,
                weight: owner_weight / apps_of[a.owner.as_str()],
            }
        })
        .collect();
    let snapshot = VariantSnapshot {
        platforms: &platforms,
        applications: &applications,
    };
    let decided = scheduler.plan(&snapshot, rng)?;
    let mut out = VariantLeasePlan::default();
    let mut view = Vec::new();
    for (i, a) in apps.iter().enumerate() {
        if !live.declared.contains(&a.id) {
            continue;
        }
        let mut quotas = HashMap::new();
        for (j, p) in platforms.iter().enumerate() {
            let chosen = decided.variants_on(i, j);
            for &(v, tasks) in &chosen {
                let variant = &applications[i].variants[v];
                view.push(VariantAllocation {
                    app: a.id,
                    name: a.name.clone(),
                    platform: p.name.clone(),
                    variant: variant.name.clone(),
                    tasks,
                    cores: tasks.saturating_mul(u64::from(variant.cores)),
                    gpus: tasks as f64 * variant.gpus.as_f64(),
                });
            }
            let planned: Vec<VariantQuota> = chosen
                .into_iter()
                .map(|(variant, slots)| VariantQuota {
                    variant,
                    per_agent: u32::try_from(slots.div_ceil(u64::from(p.nodes.max(1))))
                        .unwrap_or(u32::MAX),
                })
                .collect();
            if !planned.is_empty() {
                quotas.insert(p.name.clone(), planned);
            }
            for (v, variant) in applications[i].variants.iter().enumerate() {
                if !variant.fits(p) {
                    continue;
                }
                let (_, measured) = input.stats.variant_mean(a.id, &p.name, &variant.name);
                let running = live
                    .in_flight
                    .get(&(a.id, p.name.clone(), v))
                    .copied()
                    .unwrap_or(0);
                let budget = u64::from(input.explore_samples)
                    .saturating_sub(measured.saturating_add(running));
                if budget > 0 {
                    out.explore.entry(p.name.clone()).or_default().push((
                        a.id,
                        v,
                        u32::try_from(budget).unwrap_or(u32::MAX),
                    ));
                }
            }
        }
        out.quotas.insert(a.id, quotas);
    }
    Ok(Some(VariantRound { plan: out, view }))
}
