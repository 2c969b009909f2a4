//! The pilot-based discrete-event engine (Section 6.1).
//!
//! Every core allocated to an application runs a pilot that fetches the next task from
//! that application's queue until it is empty; simultaneous fetches are ordered by the
//! seeded RNG. The scheduler runs at the start, whenever an application's queue drains
//! (its cores become free for others) and whenever an application arrives. Re-allocation
//! is non-preemptive: a core switches to its new application when its task ends. A task's
//! runtime is the profile's mean for its application in the node's planned co-runner
//! combination (OneCore when it is alone on the node with one core), times a factor drawn
//! from the application's runtime distribution.

use rand::seq::SliceRandom;
use rand::RngCore;
use rand_distr::{Distribution, Exp, LogNormal};

use super::outcome::{AppOutcome, RunOutcome};
use hetpilot_core::event_queue::EventQueue;
use hetpilot_core::sched::SchedError;
use hetpilot_core::sched::Scheduler;
use hetpilot_core::sched::{fairness_index, fastest_one_core_throughput};
use hetpilot_core::sched::{ApplicationState, CoreAllocation, PlatformState, Snapshot};
use hetpilot_core::sched::{RuntimeDistribution, RuntimeProfile};

/// One application of a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct SimApplication {
    pub(crate) profile_index: usize,
    /// Tasks it submits.
    pub tasks: u64,
    /// Index into [`SimulationInput::user_weights`].
    pub(crate) owner: usize,
}

/// When the applications are submitted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    /// All at time 0 (Section 6.1).
    AllAtOnce,
    /// In random order, with exponential gaps of the given mean (Section 6.5); the first
    /// arrives at time 0.
    Poisson {
        /// Mean gap between two submissions, seconds.
        mean_interarrival_s: f64,
    },
}

/// Everything one simulation run needs (see [`super::Scenario::resolve`]).
#[derive(Debug, Clone)]
pub struct SimulationInput<'p> {
    pub(crate) profile: &'p RuntimeProfile,
    pub(crate) platforms: Vec<PlatformState>,
    /// The applications, in scenario order.
    pub applications: Vec<SimApplication>,
    pub(crate) user_weights: Vec<f64>,
    /// When the applications are submitted.
    pub arrivals: Arrivals,
}

impl SimulationInput<'_> {
    /// Total cores of all platforms.
    pub fn total_cores(&self) -> u64 {
        self.platforms
            .iter()
            .map(|p| {
                u64::from(p.nodes)
                    * u64::from(self.profile.platforms()[p.profile_index].cores_per_node)
            })
            .sum()
    }
}

const NO_APP: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
enum Event {
    /// The task on this core (global core index) ends.
    CoreFree(usize),
    /// This application is submitted.
    Arrival(usize),
}

/// Per-application task-runtime factor sampler (mean 1).
enum Factor {
    Constant,
    LogNormal(LogNormal<f64>),
}

impl Factor {
    fn new(d: RuntimeDistribution) -> Self {
        match d {
            RuntimeDistribution::LogNormal { cv } if cv > 0.0 => {
                let sigma2 = (1.0 + cv * cv).ln();
                LogNormal::new(-sigma2 / 2.0, sigma2.sqrt()).map_or(Self::Constant, Self::LogNormal)
            }
            _ => Self::Constant,
        }
    }

    fn sample(&self, rng: &mut dyn RngCore) -> f64 {
        match self {
            Self::Constant => 1.0,
            Self::LogNormal(d) => d.sample(rng),
        }
    }
}

/// The mutable state of one run.
struct Engine<'a> {
    input: &'a SimulationInput<'a>,
    /// First global core index of each platform.
    platform_base: Vec<usize>,
    /// Planned application (input index) and its mean runtime, per core.
    core_app: Vec<u32>,
    core_mean: Vec<f64>,
    /// Application of the running task per core (NO_APP = idle).
    core_running: Vec<u32>,
    queue: Vec<u64>,
    running: Vec<u64>,
    arrived: Vec<bool>,
    arrival: Vec<f64>,
    finish: Vec<f64>,
    factors: Vec<Factor>,
    events: EventQueue<f64, Event>,
    reschedule: bool,
}

/// Run one simulation. Degenerate inputs (no applications, no cores, zero-task
/// applications) give a valid outcome; an application that can never get a core
/// (no cores at all) reports no finish time.
pub fn simulate(
    input: &SimulationInput,
    scheduler: &Scheduler,
    rng: &mut dyn RngCore,
) -> Result<RunOutcome, SchedError> {
    let profile = input.profile;
    let mut platform_base = Vec::with_capacity(input.platforms.len());
    let mut total = 0usize;
    for p in &input.platforms {
        platform_base.push(total);
        total += p.nodes as usize * profile.platforms()[p.profile_index].cores_per_node as usize;
    }
    let n = input.applications.len();
    let mut engine = Engine {
        input,
        platform_base,
        core_app: vec![NO_APP; total],
        core_mean: vec![0.0; total],
        core_running: vec![NO_APP; total],
        queue: input.applications.iter().map(|a| a.tasks).collect(),
        running: vec![0; n],
        arrived: vec![false; n],
        arrival: vec![0.0; n],
        finish: vec![f64::NAN; n],
        factors: input
            .applications
            .iter()
            .map(|a| Factor::new(profile.applications()[a.profile_index].distribution))
            .collect(),
        events: EventQueue::with_capacity(total + n),
        reschedule: false,
    };
    // Submissions.
    match input.arrivals {
        Arrivals::AllAtOnce => {
            for i in 0..n {
                engine.arrive(i, 0.0);
            }
            engine.reschedule = true;
        }
        Arrivals::Poisson {
            mean_interarrival_s,
        } => {
            let mut order: Vec<usize> = (0..n).collect();
            order.shuffle(rng);
            let gap =
                Exp::new(1.0 / mean_interarrival_s).map_err(|e| SchedError::InvalidSetting {
                    field: "poisson_mean_interarrival_s",
                    problem: e.to_string(),
                })?;
            let mut t = 0.0;
            for (k, &i) in order.iter().enumerate() {
                if k > 0 {
                    t += gap.sample(rng);
                }
                engine.events.push(t, rng.next_u64(), Event::Arrival(i));
            }
        }
    }
    let mut previous: Option<CoreAllocation> = None;
    let mut rounds = 0usize;
    let mut now = 0.0;
    loop {
        if engine.reschedule {
            engine.reschedule = false;
            let decision = engine.schedule(now, scheduler, previous.as_ref(), rng)?;
            engine.apply(&decision, now, rng);
            previous = Some(decision.allocation);
            rounds += 1;
        }
        let Some((t, event)) = engine.events.pop() else {
            break;
        };
        now = t;
        match event {
            Event::Arrival(i) => {
                engine.arrive(i, t);
                engine.reschedule = true;
            }
            Event::CoreFree(core) => engine.core_free(core, t, rng),
        }
    }
    Ok(engine.outcome(rounds))
}

impl Engine<'_> {
    fn arrive(&mut self, i: usize, t: f64) {
        self.arrived[i] = true;
        self.arrival[i] = t;
        if self.queue[i] == 0 {
            self.finish[i] = t;
        }
    }

    fn schedule(
        &self,
        now: f64,
        scheduler: &Scheduler,
        previous: Option<&CoreAllocation>,
        rng: &mut dyn RngCore,
    ) -> Result<hetpilot_core::sched::Decision, SchedError> {
        let applications: Vec<ApplicationState> = self
            .input
            .applications
            .iter()
            .enumerate()
            .map(|(i, a)| ApplicationState {
                profile_index: a.profile_index,
                remaining_tasks: if self.arrived[i] { self.queue[i] } else { 0 },
                owner: a.owner,
                completed_tasks: a.tasks - self.queue[i] - self.running[i],
                age_s: if self.arrived[i] {
                    now - self.arrival[i]
                } else {
                    0.0
                },
            })
            .collect();
        let snapshot = Snapshot {
            profile: self.input.profile,
            applications: &applications,
            platforms: &self.input.platforms,
            user_weights: &self.input.user_weights,
            previous,
        };
        scheduler.schedule(&snapshot, rng)
    }

    /// Install a decision's node plans and start idle cores on their new application.
    fn apply(
        &mut self,
        decision: &hetpilot_core::sched::Decision,
        now: f64,
        rng: &mut dyn RngCore,
    ) {
        let profile = self.input.profile;
        self.core_app.fill(NO_APP);
        let mut members: Vec<usize> = Vec::new();
        for (j, groups) in decision.placements.iter().enumerate() {
            let platform = self.input.platforms[j].profile_index;
            let per_node = profile.platforms()[platform].cores_per_node as usize;
            let nodes = self.input.platforms[j].nodes as usize;
            let mut node = 0usize;
            for g in groups {
                members.clear();
                members.extend(
                    g.slots
                        .iter()
                        .map(|&(i, _)| self.input.applications[i].profile_index),
                );
                members.sort_unstable();
                let means: Vec<f64> = g
                    .slots
                    .iter()
                    .map(|&(i, cores)| {
                        let app = self.input.applications[i].profile_index;
                        profile.runtime_in(
                            app,
                            platform,
                            &members,
                            g.slots.len() == 1 && cores == 1,
                        )
                    })
                    .collect();
                for _ in 0..g.nodes {
                    if node >= nodes {
                        break;
                    }
                    let mut core = self.platform_base[j] + node * per_node;
                    for (k, &(i, cores)) in g.slots.iter().enumerate() {
                        for _ in 0..cores {
                            self.core_app[core] = i as u32;
                            self.core_mean[core] = means[k];
                            core += 1;
                        }
                    }
                    node += 1;
                }
            }
        }
        for core in 0..self.core_app.len() {
            if self.core_running[core] == NO_APP {
                self.try_start(core, now, rng);
            }
        }
    }

    /// The pilot on `core` fetches a task of its planned application, if any is left.
    fn try_start(&mut self, core: usize, now: f64, rng: &mut dyn RngCore) {
        let app = self.core_app[core];
        if app == NO_APP {
            return;
        }
        let i = app as usize;
        if self.queue[i] == 0 {
            return;
        }
        self.queue[i] -= 1;
        self.running[i] += 1;
        self.core_running[core] = app;
        let runtime = self.core_mean[core] * self.factors[i].sample(rng);
        self.events
            .push(now + runtime, rng.next_u64(), Event::CoreFree(core));
        if self.queue[i] == 0 {
            // The application's cores can go to others now.
            self.reschedule = true;
        }
    }

    fn core_free(&mut self, core: usize, t: f64, rng: &mut dyn RngCore) {
        let i = self.core_running[core] as usize;
        self.core_running[core] = NO_APP;
        self.running[i] -= 1;
        if self.running[i] == 0 && self.queue[i] == 0 {
            self.finish[i] = t;
        }
        self.try_start(core, t, rng);
    }

    fn outcome(&self, rounds: usize) -> RunOutcome {
        let input = self.input;
        let n = input.applications.len();
        let platforms: Vec<usize> = input
            .platforms
            .iter()
            .filter(|p| p.nodes > 0)
            .map(|p| p.profile_index)
            .collect();
        let fair_share = if n == 0 {
            0.0
        } else {
            input.total_cores() as f64 / n as f64
        };
        let apps: Vec<AppOutcome> = (0..n)
            .map(|i| {
                let a = &input.applications[i];
                let finished = self.arrived[i] && self.finish[i].is_finite();
                let elapsed = self.finish[i] - self.arrival[i];
                let throughput = if finished && a.tasks > 0 && elapsed > 0.0 {
                    Some(a.tasks as f64 * 3600.0 / elapsed)
                } else {
                    None
                };
                let ideal = fastest_one_core_throughput(
                    input.profile,
                    a.profile_index,
                    &platforms,
                    fair_share,
                );
                AppOutcome {
                    arrival: self.arrival[i],
                    finish: finished.then_some(self.finish[i]),
                    tasks: a.tasks,
                    throughput_per_hour: throughput,
                    normalized_throughput: throughput.filter(|_| ideal > 0.0).map(|t| t / ideal),
                }
            })
            .collect();
        let normalized: Vec<f64> = apps
            .iter()
            .filter_map(|a| a.normalized_throughput)
            .collect();
        let makespan = apps.iter().filter_map(|a| a.finish).fold(0.0, f64::max);
        RunOutcome {
            fairness: fairness_index(&normalized),
            fairness_present_share: super::present_share::present_share_fairness(&apps),
            makespan,
            rounds,
            apps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_core::sched::test_profiles::synthetic_profile;
    use hetpilot_core::sched::SchedulerSettings;
    use hetpilot_core::sched::{ApplicationProfile, CombinationSpec, ProfiledPlatform};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn one_core_profile() -> RuntimeProfile {
        RuntimeProfile::new(
            "<memory>",
            vec![ApplicationProfile {
                name: "x".into(),
                distribution: RuntimeDistribution::Constant,
            }],
            vec![ProfiledPlatform {
                name: "p".into(),
                cores_per_node: 1,
                max_nodes: None,
            }],
            vec![vec![100.0]],
            vec![CombinationSpec {
                platform: 0,
                runtimes: vec![(0, 100.0)],
            }],
        )
        .unwrap()
    }

    fn run(input: &SimulationInput, settings: SchedulerSettings, seed: u64) -> RunOutcome {
        simulate(
            input,
            &Scheduler::new(settings).unwrap(),
            &mut ChaCha8Rng::seed_from_u64(seed),
        )
        .unwrap()
    }

    #[test]
    fn one_application_on_one_core_takes_the_sum_of_its_runtimes() {
        let profile = one_core_profile();
        let input = SimulationInput {
            profile: &profile,
            platforms: vec![PlatformState {
                profile_index: 0,
                nodes: 1,
            }],
            applications: vec![SimApplication {
                profile_index: 0,
                tasks: 10,
                owner: 0,
            }],
            user_weights: vec![1.0],
            arrivals: Arrivals::AllAtOnce,
        };
        let out = run(&input, SchedulerSettings::default(), 1);
        assert_eq!(out.makespan, 1000.0);
        assert_eq!(out.apps[0].finish, Some(1000.0));
        assert_eq!(out.apps[0].throughput_per_hour, Some(36.0));
        // Fastest-OneCore with the whole single core: normalized throughput 1.
        assert!((out.apps[0].normalized_throughput.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(out.fairness, 1.0);
    }

    #[test]
    fn degenerate_inputs_give_valid_outcomes() {
        let profile = synthetic_profile(3, 2, 2, 2, 5);
        let base = SimulationInput {
            profile: &profile,
            platforms: vec![
                PlatformState {
                    profile_index: 0,
                    nodes: 4,
                },
                PlatformState {
                    profile_index: 1,
                    nodes: 0,
                },
            ],
            applications: vec![
                SimApplication {
                    profile_index: 0,
                    tasks: 50,
                    owner: 0,
                },
                SimApplication {
                    profile_index: 1,
                    tasks: 0,
                    owner: 1,
                },
            ],
            user_weights: vec![1.0, 1.0],
            arrivals: Arrivals::AllAtOnce,
        };
        let out = run(&base, SchedulerSettings::default(), 2);
        assert!(out.apps[0].finish.is_some_and(|f| f > 0.0));
        assert_eq!(out.apps[1].finish, Some(0.0));
        assert_eq!(out.apps[1].throughput_per_hour, None);
        assert_eq!(out.fairness, 1.0, "one application ran");

        let no_apps = SimulationInput {
            applications: vec![],
            user_weights: vec![],
            ..base.clone()
        };
        let out = run(&no_apps, SchedulerSettings::default(), 2);
        assert!(out.apps.is_empty() && out.makespan == 0.0);

        let no_cores = SimulationInput {
            platforms: vec![PlatformState {
                profile_index: 0,
                nodes: 0,
            }],
            ..base.clone()
        };
        let out = run(&no_cores, SchedulerSettings::default(), 2);
        assert_eq!(out.apps[0].finish, None);
        assert_eq!(out.makespan, 0.0);
    }

    #[test]
    fn every_policy_completes_all_applications_reproducibly() {
        let profile = synthetic_profile(4, 3, 4, 3, 9);
        let input = SimulationInput {
            profile: &profile,
            platforms: (0..3)
                .map(|j| PlatformState {
                    profile_index: j,
                    nodes: 3,
                })
                .collect(),
            applications: (0..4)
                .map(|i| SimApplication {
                    profile_index: i,
                    tasks: 40 + 10 * i as u64,
                    owner: i,
                })
                .collect(),
            user_weights: vec![1.0; 4],
            arrivals: Arrivals::AllAtOnce,
        };
        // Lower bound: all work on the fastest platforms, no slowdown, 36 cores.
        let work: f64 = (0..4)
            .map(|i| {
                (40 + 10 * i) as f64
                    * (0..3)
                        .map(|j| profile.one_core(i, j))
                        .fold(f64::INFINITY, f64::min)
            })
            .sum();
        for &first in hetpilot_core::sched::FirstLevel::ALL {
            for &second in hetpilot_core::sched::SecondLevel::ALL {
                let settings = SchedulerSettings {
                    first_level: first,
                    second_level: second,
                    ..Default::default()
                };
                let a = run(&input, settings.clone(), 4);
                assert!(
                    a.apps.iter().all(|x| x.finish.is_some()),
                    "{first}+{second}"
                );
                assert!(a.makespan * 36.0 >= work * 0.5, "{first}+{second} too fast");
                assert!(a.fairness <= 1.0 && a.rounds >= 1);
                assert_eq!(
                    a,
                    run(&input, settings, 4),
                    "{first}+{second} not reproducible"
                );
            }
        }
    }

    #[test]
    fn poisson_arrivals_spread_submissions() {
        let profile = synthetic_profile(4, 2, 2, 2, 11);
        let input = SimulationInput {
            profile: &profile,
            platforms: (0..2)
                .map(|j| PlatformState {
                    profile_index: j,
                    nodes: 4,
                })
                .collect(),
            applications: (0..4)
                .map(|i| SimApplication {
                    profile_index: i,
                    tasks: 30,
                    owner: i,
                })
                .collect(),
            user_weights: vec![1.0; 4],
            arrivals: Arrivals::Poisson {
                mean_interarrival_s: 500.0,
            },
        };
        let out = run(&input, SchedulerSettings::default(), 3);
        let mut arrivals: Vec<f64> = out.apps.iter().map(|a| a.arrival).collect();
        arrivals.sort_by(f64::total_cmp);
        assert_eq!(arrivals[0], 0.0);
        assert!(arrivals.windows(2).all(|w| w[0] < w[1]));
        assert!(out
            .apps
            .iter()
            .all(|a| a.finish.is_some_and(|f| f > a.arrival)));
        assert!(out.rounds >= 4, "one round per arrival at least");
    }
}
