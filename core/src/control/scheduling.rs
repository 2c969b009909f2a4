//! Live two-level scheduling: a round turns the live state (applications with waiting
//! tasks, platforms with agents, the online profile, user weights) into a
//! [`sched::Snapshot`](crate::sched::Snapshot), calls the pure
//! [`Scheduler::schedule`](crate::sched::Scheduler::schedule) with a seeded RNG, and turns
//! the [`Decision`](crate::sched::Decision) into the queues' [`LeasePlan`] plus a view for
//! `hetpilot schedule`. No I/O: the clock and the state come in as data.

use super::placement::{place, place_runs, GroupApp, Node, ParallelApp};
use super::profiling::{LiveProfile, RoundPlatform, RunStats};
use super::SchedulerConfig;
use crate::alloc::Allocator;
use crate::queue::{LeasePlan, PlatformPlan};
use crate::sched::{
    ApplicationState, CoreAllocation, Decision, PlatformState, RuntimeProfileError, SchedError,
    Scheduler, SchedulerSettings, Snapshot,
};
use hetpilot_protocol::parallel::ParallelSize;
use hetpilot_protocol::views::{AppAllocation, PlatformView, ScheduleView};
use hetpilot_protocol::{AgentId, AppId};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap};

/// An application as a round sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LiveApp {
    pub(crate) id: AppId,
    pub(crate) name: String,
    pub(crate) owner: String,
    pub(crate) waiting: u64,
    /// Leased or running.
    pub(crate) in_flight: u64,
    pub(crate) done: u64,
    pub(crate) cores: u32,
    /// Its runs of several agents (`nodes`/`procs`): a parallel application's, or a
    /// workflow's ready parallel tasks.
    pub(crate) parallel: Option<ParallelRuns>,
    pub(crate) submitted_ms: u64,
}

/// Waiting runs of one parallel size, which a round places on one platform and pilot
/// demand asks for whole.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ParallelRuns {
    pub(crate) size: ParallelSize,
    /// How many wait (of a workflow: its ready parallel tasks, not its other ones).
    pub(crate) waiting: u64,
}

/// An active agent as a round sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LiveAgent {
    pub(crate) id: AgentId,
    pub(crate) platform: String,
    pub(crate) slots: u32,
    /// The application of each task it holds, and the slots the task takes.
    pub(crate) held: Vec<(AppId, u32)>,
}

/// Why a round produced no decision.
#[derive(Debug, thiserror::Error)]
pub enum RoundError {
    /// The runtime profile built from the live measurements is refused.
    #[error("the live profile is unusable: {0}")]
    Profile(#[from] RuntimeProfileError),
    /// The scheduler refused the snapshot of the live state.
    #[error("the scheduler refused the live state: {0}")]
    Sched(#[from] SchedError),
}

/// What a round hands back.
#[derive(Debug)]
pub(crate) struct Round {
    pub(crate) plan: LeasePlan,
    pub(crate) view: ScheduleView,
}

/// The scheduler, its RNG and the previous allocation, kept across rounds.
pub(crate) struct Planner {
    scheduler: Scheduler,
    /// The variant first level, for rounds with applications that declare variants.
    variants: crate::sched::variants::VariantScheduler,
    /// Its own RNG, so rounds without variants draw exactly as before.
    variant_rng: ChaCha8Rng,
    explore_samples: u32,
    /// The processor allocator that places multi-core and parallel runs (`allocator`).
    allocator: Box<dyn Allocator>,
    rng: ChaCha8Rng,
    /// The previous round's applications, platforms and allocation (PAF keeps users on
    /// platforms they had).
    previous: Option<(Vec<AppId>, Vec<String>, CoreAllocation)>,
}

/// The steps of a scheduling round, as they end (see [`RoundJob::run_observed`]).
///
/// [`RoundJob::run_observed`]: super::RoundJob::run_observed
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundStep {
    /// Both levels of the two-level scheduler and the lease plan.
    TwoLevel,
    /// TLPA's placement of the multi-core applications' next tasks.
    Tlpa,
    /// The provisioning demand (a second, hypothetical round over the reachable platforms).
    Demand,
    /// The workflow policy's plan of the competing workflows (`ptg::live`).
    Workflows,
}

impl RoundStep {
    /// Its name in metrics (`planner` label).
    pub fn label(self) -> &'static str {
        match self {
            RoundStep::TwoLevel => "two-level",
            RoundStep::Tlpa => "tlpa",
            RoundStep::Demand => "demand",
            RoundStep::Workflows => "workflows",
        }
    }
}

impl Planner {
    pub(crate) fn new(
        settings: SchedulerSettings,
        config: &SchedulerConfig,
    ) -> Result<Self, SchedError> {
        Ok(Planner {
            variants: crate::sched::variants::VariantScheduler::new(settings.clone())?,
            variant_rng: ChaCha8Rng::seed_from_u64(config.seed.wrapping_add(1)),
            scheduler: Scheduler::new(settings)?,
            explore_samples: config.explore_samples,
            allocator: config.allocator()?,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            previous: None,
        })
    }

    /// One round at `now_ms`. `weights` maps owners to their first-level weight (empty:
    /// equal weights).
    pub(crate) fn round(
        &mut self,
        stats: &RunStats,
        apps: &[LiveApp],
        agents: &[LiveAgent],
        weights: &HashMap<String, f64>,
        now_ms: u64,
    ) -> Result<Round, RoundError> {
        self.round_observed(stats, apps, agents, weights, now_ms, &mut |_| {})
    }

    /// [`Self::round`], telling `observe` as each of its steps ends (the live manager
    /// times them; the core reads no clock).
    pub(crate) fn round_observed(
        &mut self,
        stats: &RunStats,
        apps: &[LiveApp],
        agents: &[LiveAgent],
        weights: &HashMap<String, f64>,
        now_ms: u64,
        observe: &mut dyn FnMut(RoundStep),
    ) -> Result<Round, RoundError> {
        let apps: Vec<&LiveApp> = apps.iter().filter(|a| a.waiting > 0).collect();
        let platforms = RoundPlatforms::of(agents);
        let ids: Vec<AppId> = apps.iter().map(|a| a.id).collect();
        let live = stats.profile(&ids, &platforms.profiled)?;
        let input = RoundInput {
            apps: &apps,
            ids: &ids,
            platforms: &platforms,
            live: &live,
            stats,
            now_ms,
        };
        let users = UserWeights::of(&apps, weights);
        let states = application_states(&input, &users);
        let platform_states: Vec<PlatformState> = platforms
            .agents
            .values()
            .enumerate()
            .map(|(j, agents)| PlatformState {
                profile_index: j,
                nodes: agents.len() as u32,
            })
            .collect();
        let previous = self.previous_allocation(&ids, &platforms.names);
        let snapshot = Snapshot {
            profile: &live.profile,
            applications: &states,
            platforms: &platform_states,
            user_weights: &users.weights,
            previous: previous.as_ref(),
        };
        let decision = self.scheduler.schedule(&snapshot, &mut self.rng)?;
        let mut plan = self.lease_plan(&input, &decision);
        plan.devices = crate::queue::DevicePlan {
            policy: Some(self.scheduler.settings().second_level),
            slowdowns: stats.devices.slowdowns(),
        };
        observe(RoundStep::TwoLevel);
        plan.parallel = self.place_parallel(&input);
        observe(RoundStep::Tlpa);
        let weight = |i: usize| snapshot.weight(states[i].owner);
        let view = self.view(&input, &decision, &plan, weight);
        self.previous = Some((ids, platforms.names, decision.allocation));
        Ok(Round { plan, view })
    }

    /// The variant round's lease plan and view rows (see `control::variant_round`); `None` when no
    /// application with waiting tasks declares variants.
    pub(super) fn variant_plan(
        &mut self,
        input: &super::variant_round::VariantRoundInput<'_>,
        live: &super::variant_round::LiveVariants,
    ) -> Result<Option<super::variant_round::VariantRound>, RoundError> {
        let input = super::variant_round::VariantRoundInput {
            explore_samples: self.explore_samples,
            ..*input
        };
        super::variant_round::plan(&self.variants, &input, live, &mut self.variant_rng)
    }

    /// The previous round's allocation, remapped to this round's applications and
    /// platforms (PAF keeps users on platforms they had).
    fn previous_allocation(&self, ids: &[AppId], names: &[String]) -> Option<CoreAllocation> {
        let (p_apps, p_platforms, alloc) = self.previous.as_ref()?;
        let mut out = CoreAllocation::zeros(ids.len(), names.len());
        for (i, id) in ids.iter().enumerate() {
            for (j, name) in names.iter().enumerate() {
                let pi = p_apps.iter().position(|a| a == id);
                let pj = p_platforms.iter().position(|p| p == name);
                if let (Some(pi), Some(pj)) = (pi, pj) {
                    out.shares[i][j] = alloc.shares[pi][pj];
                }
            }
        }
        Some(out)
    }

    /// The queues' lease plan: per platform the applications with cores there, largest
    /// share first, and the exploration still due; per agent its node's co-runner
    /// combination, scaled to its own slot count.
    fn lease_plan(&self, input: &RoundInput<'_>, decision: &Decision) -> LeasePlan {
        let ids = input.ids;
        let mut plan = LeasePlan::default();
        for (j, (name, agents)) in input.platforms.agents.iter().enumerate() {
            let mut order: Vec<(u32, AppId)> = (0..ids.len())
                .map(|i| (decision.allocation.shares[i][j], ids[i]))
                .filter(|&(c, _)| c > 0)
                .collect();
            order.sort_by_key(|&(c, id)| (std::cmp::Reverse(c), id));
            let mut in_flight: HashMap<AppId, u64> = HashMap::new();
            for a in agents {
                for (app, _) in &a.held {
                    *in_flight.entry(*app).or_insert(0) += 1;
                }
            }
            let explore = (0..ids.len())
                .filter_map(|i| {
                    let seen =
                        input.live.samples[i][j] + in_flight.get(&ids[i]).copied().unwrap_or(0);
                    let budget = u64::from(self.explore_samples).saturating_sub(seen);
                    (budget > 0).then_some((ids[i], budget as u32))
                })
                .collect();
            plan.platforms.insert(
                name.to_string(),
                PlatformPlan {
                    order: order.into_iter().map(|(_, id)| id).collect(),
                    explore,
                },
            );
            // Second level: node groups go to the platform's agents in id order, each
            // combination scaled to the agent's own slot count.
            let cpn = input.platforms.profiled[j].cores_per_node;
            let nodes = decision.placements[j]
                .iter()
                .flat_map(|g| std::iter::repeat_n(&g.slots, g.nodes as usize));
            for (agent, slots) in agents.iter().zip(nodes) {
                let scaled = slots
                    .iter()
                    .map(|&(i, c)| {
                        let s = (u64::from(c) * u64::from(agent.slots) + u64::from(cpn) / 2)
                            / u64::from(cpn);
                        (ids[i], (s as u32).max(1))
                    })
                    .collect();
                plan.agents.insert(agent.id, scaled);
            }
        }
        plan
    }

    /// TLPA places the multi-core applications' next tasks and the parallel applications'
    /// next runs (the TLPA paper, Fig. 1): the platform each one's tasks go to.
    fn place_parallel(&mut self, input: &RoundInput<'_>) -> HashMap<AppId, String> {
        let (apps, ids, names, live) = (input.apps, input.ids, &input.platforms.names, input.live);
        // An application with runs of several agents is placed for them (a workflow's
        // multi-core tasks then follow its parallel task's platform).
        let mut parallel: Vec<usize> = (0..apps.len())
            .filter(|&i| apps[i].cores > 1 && apps[i].parallel.is_none())
            .collect();
        let mut groups: Vec<usize> = (0..apps.len())
            .filter(|&i| apps[i].parallel.is_some())
            .collect();
        if (parallel.is_empty() && groups.is_empty()) || names.is_empty() {
            return HashMap::new();
        }
        groups.sort_by_key(|&i| (apps[i].submitted_ms, apps[i].id));
        parallel.sort_by_key(|&i| (apps[i].submitted_ms, apps[i].id));
        let index: HashMap<AppId, usize> = ids.iter().enumerate().map(|(i, a)| (*a, i)).collect();
        let runtime = |app: AppId, j: usize| match index.get(&app) {
            Some(&i) => live.profile.one_core(i, j),
            None => input.stats.mean(app, &names[j]).unwrap_or(0.0),
        };
        let nodes: Vec<Node> = input
            .platforms
            .agents
            .values()
            .enumerate()
            .flat_map(|(j, agents)| {
                agents.iter().map(move |a| Node {
                    platform: j,
                    slots: a.slots,
                    busy: a
                        .held
                        .iter()
                        .map(|&(app, c)| (c, runtime(app, j)))
                        .collect(),
                })
            })
            .collect();
        // Work at reference speed: runtime × speed, averaged geometrically.
        let work_s = |i: usize| {
            ((0..names.len())
                .map(|j| (live.profile.one_core(i, j) * live.speed[j]).ln())
                .sum::<f64>()
                / names.len() as f64)
                .exp()
        };
        let jobs: Vec<ParallelApp> = parallel
            .iter()
            .map(|&i| ParallelApp {
                app: ids[i],
                cores: apps[i].cores,
                waiting: apps[i].waiting,
                submitted_s: apps[i].submitted_ms as f64 / 1000.0,
                work_s: work_s(i),
            })
            .collect();
        let runs: Vec<GroupApp> = groups
            .iter()
            .filter_map(|&i| {
                let runs = apps[i].parallel?;
                Some(GroupApp {
                    app: ids[i],
                    size: runs.size,
                    waiting: runs.waiting,
                    submitted_s: apps[i].submitted_ms as f64 / 1000.0,
                    work_s: work_s(i),
                })
            })
            .collect();
        let now_s = input.now_ms as f64 / 1000.0;
        let allocator = self.allocator.as_mut();
        let mut chosen = place(&nodes, &live.speed, &jobs, allocator, now_s);
        chosen.extend(place_runs(&nodes, &live.speed, &runs, allocator, now_s));
        chosen
            .into_iter()
            .map(|(app, j)| (app, names[j].clone()))
            .collect()
    }

    /// What `hetpilot schedule` shows of the round.
    fn view(
        &self,
        input: &RoundInput<'_>,
        decision: &Decision,
        plan: &LeasePlan,
        weight: impl Fn(usize) -> f64,
    ) -> ScheduleView {
        let (platforms, live) = (input.platforms, input.live);
        ScheduleView {
            variants: Vec::new(),
            policy: self.scheduler.settings().label(),
            at_ms: input.now_ms,
            // Numbered when it takes effect (`Control::finish_round`), and stamped then by
            // the live shell (`Control::round_took_effect`).
            round: 0,
            effective_ms: 0,
            platforms: platforms
                .agents
                .values()
                .zip(&platforms.profiled)
                .zip(&live.speed)
                .map(|((agents, p), &speed)| PlatformView {
                    name: p.name.clone(),
                    agents: agents.len() as u32,
                    slots: agents.iter().map(|a| u64::from(a.slots)).sum(),
                    speed,
                })
                .collect(),
            apps: input
                .apps
                .iter()
                .enumerate()
                .map(|(i, a)| AppAllocation {
                    app: a.id,
                    name: a.name.clone(),
                    owner: a.owner.clone(),
                    weight: weight(i),
                    cores: decision.allocation.shares[i].clone(),
                    runtime_s: (0..platforms.names.len())
                        .map(|j| live.profile.one_core(i, j))
                        .collect(),
                    samples: live.samples[i].clone(),
                    placed_on: plan.parallel.get(&a.id).cloned(),
                })
                .collect(),
        }
    }
}

/// The platforms a round sees: those with agents, a node being an agent and a node's
/// cores the platform's mean slot count.
struct RoundPlatforms<'a> {
    agents: BTreeMap<&'a str, Vec<&'a LiveAgent>>,
    profiled: Vec<RoundPlatform>,
    names: Vec<String>,
}

impl<'a> RoundPlatforms<'a> {
    fn of(agents: &'a [LiveAgent]) -> Self {
        let mut by_platform: BTreeMap<&str, Vec<&LiveAgent>> = BTreeMap::new();
        for a in agents {
            by_platform.entry(&a.platform).or_default().push(a);
        }
        let profiled: Vec<RoundPlatform> = by_platform
            .iter()
            .map(|(name, agents)| {
                let slots: u64 = agents.iter().map(|a| u64::from(a.slots)).sum();
                let n = agents.len() as u64;
                RoundPlatform {
                    name: name.to_string(),
                    cores_per_node: ((slots + n / 2) / n).max(1) as u32,
                }
            })
            .collect();
        let names = profiled.iter().map(|p| p.name.clone()).collect();
        RoundPlatforms {
            agents: by_platform,
            profiled,
            names,
        }
    }
}

/// What the steps of a round read.
struct RoundInput<'a> {
    apps: &'a [&'a LiveApp],
    ids: &'a [AppId],
    platforms: &'a RoundPlatforms<'a>,
    live: &'a LiveProfile,
    stats: &'a RunStats,
    now_ms: u64,
}

/// The owners of the round's applications, sorted, and their first-level weights (empty:
/// equal weights).
struct UserWeights<'a> {
    owners: Vec<&'a str>,
    weights: Vec<f64>,
}

impl<'a> UserWeights<'a> {
    fn of(apps: &[&'a LiveApp], weights: &HashMap<String, f64>) -> Self {
        let mut owners: Vec<&str> = apps.iter().map(|a| a.owner.as_str()).collect();
        owners.sort();
        owners.dedup();
        let weights = if weights.is_empty() {
            Vec::new()
        } else {
            owners
                .iter()
                .map(|o| weights.get(*o).copied().unwrap_or(1.0))
                .collect()
        };
        UserWeights { owners, weights }
    }
}

/// Each application's state for the scheduler: its demand in cores (what waits and what
/// runs), its owner, progress and age.
fn application_states(input: &RoundInput<'_>, users: &UserWeights<'_>) -> Vec<ApplicationState> {
    input
        .apps
        .iter()
        .enumerate()
        .map(|(i, a)| ApplicationState {
            profile_index: i,
            remaining_tasks: (a.waiting + a.in_flight) * u64::from(a.cores),
            owner: users
                .owners
                .binary_search(&a.owner.as_str())
                .expect("listed"),
            completed_tasks: a.done,
            age_s: input.now_ms.saturating_sub(a.submitted_ms) as f64 / 1000.0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{AgentEntry, AppEntry, Queues};
    use crate::test_apps::{alice_entry, array_app};
    use hetpilot_protocol::spec::AppSpec;

    fn live_app(id: u64, owner: &str, waiting: u64) -> LiveApp {
        LiveApp {
            id: AppId(id),
            name: format!("app{id}"),
            owner: owner.into(),
            waiting,
            in_flight: 0,
            done: 0,
            cores: 1,
            parallel: None,
            submitted_ms: 0,
        }
    }

    fn agent(id: u64, platform: &str, slots: u32) -> LiveAgent {
        LiveAgent {
            id: AgentId(id),
            platform: platform.into(),
            slots,
            held: Vec::new(),
        }
    }

    fn planner(policy: &str) -> Planner {
        let config = SchedulerConfig {
            policy: policy.parse().unwrap(),
            ..SchedulerConfig::default()
        };
        Planner::new(config.settings().unwrap().unwrap(), &config).unwrap()
    }

    /// "cpu" runs 4× faster on `fast` than on `slow`; "io" runs about as fast on both.
    fn measured() -> RunStats {
        let mut stats = RunStats::default();
        for _ in 0..3 {
            stats.add(AppId(1), "fast", &[], 10.0);
            stats.add(AppId(1), "slow", &[], 40.0);
            stats.add(AppId(2), "fast", &[], 20.0);
            stats.add(AppId(2), "slow", &[], 22.0);
        }
        stats
    }

    fn queue_app(id: u64, n: u64, cores: u32) -> AppEntry {
        let spec = AppSpec {
            cores,
            max_attempts: 2,
            ..array_app(&format!("app{id}"), n)
        };
        alice_entry(AppId(id), spec)
    }

    #[test]
    fn a_round_tells_its_steps_in_order() {
        let apps = [live_app(1, "alice", 100), live_app(2, "bob", 100)];
        let agents = [agent(10, "fast", 4), agent(20, "slow", 4)];
        let mut steps = Vec::new();
        planner("pa-rr")
            .round_observed(
                &measured(),
                &apps,
                &agents,
                &HashMap::new(),
                5_000,
                &mut |s| steps.push(s),
            )
            .unwrap();
        assert_eq!(steps, vec![RoundStep::TwoLevel, RoundStep::Tlpa]);
    }

    #[test]
    fn allocation_and_leases_follow_measured_platform_affinity() {
        let apps = [live_app(1, "alice", 100), live_app(2, "bob", 100)];
        let agents = [agent(10, "fast", 4), agent(20, "slow", 4)];
        for policy in ["pa-rr", "paf", "aaf", "water-fill"] {
            let round = planner(policy)
                .round(&measured(), &apps, &agents, &HashMap::new(), 5_000)
                .unwrap();
            let cores: Vec<Vec<u32>> = round.view.apps.iter().map(|a| a.cores.clone()).collect();
            assert_eq!(cores, vec![vec![4, 0], vec![0, 4]], "{policy}");
            assert_eq!(round.view.platforms[0].name, "fast");
            assert!(round.view.platforms[0].speed > round.view.platforms[1].speed);
        }
        let round = planner("pa-rr")
            .round(&measured(), &apps, &agents, &HashMap::new(), 5_000)
            .unwrap();
        assert_eq!(round.plan.agents[&AgentId(10)], vec![(AppId(1), 4)]);
        assert_eq!(round.plan.agents[&AgentId(20)], vec![(AppId(2), 4)]);
        assert!(
            round.plan.platforms["fast"].explore.is_empty(),
            "all measured"
        );

        // The queues follow the plan: each agent gets its application's tasks only, and
        // when those run out the other application fills the slots (work conservation).
        let mut q = Queues::new(1_000);
        q.insert_app(queue_app(1, 6, 1));
        q.insert_app(queue_app(2, 100, 1));
        q.insert_agent(AgentEntry::new(
            AgentId(10),
            "fast".into(),
            "a".into(),
            4,
            0,
        ));
        q.insert_agent(AgentEntry::new(
            AgentId(20),
            "slow".into(),
            "b".into(),
            4,
            0,
        ));
        q.set_plan(round.plan);
        let apps_of = |b: &crate::queue::LeaseBatch| -> Vec<u64> {
            b.tasks.iter().map(|t| t.task.app.0).collect()
        };
        assert_eq!(apps_of(&q.lease(AgentId(10), 4, 1).unwrap()), vec![1; 4]);
        assert_eq!(apps_of(&q.lease(AgentId(20), 4, 2).unwrap()), vec![2; 4]);
        assert_eq!(
            apps_of(&q.lease(AgentId(10), 4, 3).unwrap()),
            vec![1, 1, 2, 2],
            "the last two tasks of app 1, then app 2 rather than an idle slot"
        );
    }

    #[test]
    fn unmeasured_pairs_are_explored_and_weights_scale_shares() {
        let mut stats = RunStats::default();
        stats.add(AppId(1), "fast", &[], 10.0);
        let apps = [live_app(1, "alice", 100), live_app(2, "bob", 100)];
        let mut agents = [agent(10, "fast", 4), agent(20, "slow", 4)];
        agents[1].held = vec![(AppId(1), 1)];
        let round = planner("pa-rr")
            .round(&stats, &apps, &agents, &HashMap::new(), 0)
            .unwrap();
        assert_eq!(
            round.plan.platforms["fast"].explore,
            vec![(AppId(1), 1), (AppId(2), 2)]
        );
        assert_eq!(
            round.plan.platforms["slow"].explore,
            vec![(AppId(1), 1), (AppId(2), 2)],
            "one task of app 1 is already running there"
        );
        // One platform: alice's weight 3 against bob's 1 gives her 3 of the 4 cores.
        let weights = HashMap::from([("alice".to_string(), 3.0), ("bob".to_string(), 1.0)]);
        let round = planner("fairness")
            .round(&measured(), &apps, &agents[..1], &weights, 0)
            .unwrap();
        let cores: Vec<u32> = round.view.apps.iter().map(|a| a.cores[0]).collect();
        assert_eq!(cores, vec![3, 1]);
        assert_eq!(round.view.apps[0].weight, 3.0);
    }

    #[test]
    fn tlpa_places_multi_core_tasks_and_leases_keep_to_its_choice() {
        let mut stats = RunStats::default();
        for p in ["small", "big"] {
            stats.add(AppId(1), p, &[], 10.0);
            stats.add(AppId(2), p, &[], 1000.0);
        }
        // One 4-core task of app 1 in the round's view (more arrive in the queue below).
        let mut apps = [live_app(1, "alice", 1), live_app(2, "bob", 1)];
        apps[0].cores = 4;
        apps[1].cores = 8;
        let agents = [agent(10, "big", 8), agent(20, "small", 4)];
        let round = planner("pa-rr")
            .round(&stats, &apps, &agents, &HashMap::new(), 0)
            .unwrap();
        // The short 4-core tasks could start on either node, but the look-ahead sees the
        // 8-core task that only `big` can hold.
        assert_eq!(round.plan.parallel[&AppId(1)], "small");
        assert_eq!(round.plan.parallel[&AppId(2)], "big");

        let mut q = Queues::new(1_000);
        q.insert_app(queue_app(1, 3, 4));
        q.insert_app(queue_app(2, 1, 8));
        q.insert_agent(AgentEntry::new(AgentId(10), "big".into(), "a".into(), 8, 0));
        q.insert_agent(AgentEntry::new(
            AgentId(20),
            "small".into(),
            "b".into(),
            4,
            0,
        ));
        q.set_plan(round.plan);
        let apps_of = |b: &crate::queue::LeaseBatch| -> Vec<u64> {
            b.tasks.iter().map(|t| t.task.app.0).collect()
        };
        // Asked for 16 (slots + prefetch), each agent gets what fits its free slots.
        assert_eq!(apps_of(&q.lease(AgentId(10), 16, 1).unwrap()), vec![2]);
        assert_eq!(apps_of(&q.lease(AgentId(20), 16, 2).unwrap()), vec![1]);
        assert!(
            q.lease(AgentId(20), 16, 3).unwrap().tasks.is_empty(),
            "no free slot"
        );
        assert!(
            q.lease(AgentId(10), 16, 4).unwrap().tasks.is_empty(),
            "app 1 stays on its TLPA platform"
        );
    }

    #[test]
    fn tlpa_places_parallel_runs_on_the_platform_their_look_ahead_favours() {
        let mut stats = RunStats::default();
        for p in ["small", "big"] {
            stats.add(AppId(1), p, &[], 10.0);
            stats.add(AppId(2), p, &[], 1000.0);
        }
        // Runs of 4 slots (app 1) and of 8 (app 2) over the platforms' agents: `big` has
        // two agents of 4 slots, `small` one. Either platform holds app 1's run now, but
        // the look-ahead sees app 2's run, which only `big` can hold.
        let mut apps = [live_app(1, "alice", 1), live_app(2, "bob", 1)];
        let runs = |size| Some(ParallelRuns { size, waiting: 1 });
        apps[0].parallel = runs(ParallelSize::Procs(4));
        apps[1].parallel = runs(ParallelSize::Procs(8));
        let agents = [
            agent(10, "big", 4),
            agent(11, "big", 4),
            agent(20, "small", 4),
        ];
        let round = planner("pa-rr")
            .round(&stats, &apps, &agents, &HashMap::new(), 0)
            .unwrap();
        assert_eq!(round.plan.parallel[&AppId(1)], "small");
        assert_eq!(round.plan.parallel[&AppId(2)], "big");
    }

    /// A policy's name is checked as the configuration is read, and the error lists the
    /// accepted names.
    #[test]
    fn configuration_errors_name_the_accepted_values() {
        let read = |text: &str| toml::from_str::<SchedulerConfig>(text).map_err(|e| e.to_string());
        for (text, accepted) in [
            ("policy = \"fastest\"", ["pa-rr", "round-robin"]),
            ("metric = \"speed\"", ["rpa", "epa"]),
            ("second_level = \"best\"", ["maf", "ca-rr"]),
            (
                "workflows = \"selfish\"",
                ["cafm-k-shelves", "cra-work-weight"],
            ),
            ("allocator = \"worst-fit\"", ["allocator", "bf, ff, tlpa"]),
        ] {
            let e = read(text).unwrap_err();
            assert!(accepted.iter().all(|a| e.contains(a)), "{text}: {e}");
        }
        // A look-ahead past every queue would overflow the placement's arithmetic.
        let deep = SchedulerConfig {
            tlpa_depth: usize::MAX,
            ..SchedulerConfig::default()
        };
        let err = deep.settings().unwrap_err().to_string();
        assert!(err.contains("tlpa_depth"), "{err}");
        let rr = read("policy = \"round-robin\"").unwrap();
        assert_eq!(rr.settings().unwrap(), None);
        let paf = read("policy = \"paf\"\nmetric = \"epa\"").unwrap();
        let settings = paf.settings().unwrap().unwrap();
        assert_eq!(settings.first_level, crate::sched::FirstLevel::Paf);
        assert_eq!(
            settings.platform_affinity,
            crate::sched::PlatformAffinity::Egocentric
        );
        // Written back by the same names.
        assert_eq!(read(&toml::to_string(&paf).unwrap()).unwrap(), paf);
    }
}
