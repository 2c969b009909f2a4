//! The simulated world around a control plane: agents that join after their batch-queue
//! wait, pull tasks when they have free slots (and wait for work when there is none),
//! run each for the scenario's runtime on their platform and report it, and scheduling
//! rounds on every change that matters and at least every `[scheduler] interval_ms`, as
//! the live manager runs them. Discrete events on an integer millisecond clock; ties in
//! the order they were scheduled, so a run is reproducible.

use super::scenario::{spec_of, Scenario, ScenarioError};
use crate::control::journal::Entry;
use crate::control::{AgentJoin, Control, ReportHistory, StoredAttempt};
use crate::event_queue::EventQueue;
use crate::sched::SchedError;
use hetpilot_protocol::protocol::{Measurements, Outcome, TaskAttempt, TaskResult};
use hetpilot_protocol::{AgentId, AppId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Why a simulation cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario itself is unusable.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The `[scheduler]` settings do not make a control plane.
    #[error("the scheduler settings are refused: {0}")]
    Settings(#[from] SchedError),
    /// An application whose spec does not validate.
    #[error("application `{app}` is refused: {reason}")]
    Spec {
        /// The application's name.
        app: String,
        /// Why its spec is refused.
        reason: String,
    },
    /// An application (named) that no agent can ever run.
    #[error(
        "no agent can run application `{0}` (its tasks need more cores than any agent has slots)"
    )]
    Stuck(String),
}

/// A round's allocation: cores of each application (by name) on each platform.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AllocationRecord {
    /// When the round finished, ms from the start.
    pub at_ms: u64,
    /// The platforms of the round's view, in its order.
    pub platforms: Vec<String>,
    /// Each allocated application's name and its cores per platform (in `platforms` order).
    pub apps: Vec<(String, Vec<u32>)>,
}

/// What a simulation produced.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SimOutcome {
    /// When the last task ended, ms from the start.
    pub makespan_ms: u64,
    /// When each application's last task ended.
    pub finished_ms: BTreeMap<String, u64>,
    /// When each application's first task started.
    pub started_ms: BTreeMap<String, u64>,
    /// Tasks each application ran on each platform.
    pub runs: BTreeMap<String, BTreeMap<String, u64>>,
    /// Every round whose allocation differed from the round before.
    pub allocations: Vec<AllocationRecord>,
    /// Scheduling rounds run.
    pub rounds: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    Submit(usize),
    Join { platform: usize, nth: usize },
    Pull(AgentId),
    End { agent: AgentId, at: TaskAttempt },
    Round,
}

struct SimAgent {
    platform: usize,
    slots: u32,
    /// The runs it holds: app, cores, start.
    running: HashMap<TaskAttempt, (AppId, u32, u64)>,
    /// Waiting for work (a long poll that found nothing).
    idle: bool,
}

/// Runs a scenario to completion through a fresh control plane.
pub fn simulate(scenario: &Scenario) -> Result<SimOutcome, SimError> {
    simulate_observed(scenario, &mut |_| {})
}

/// [`simulate`], telling `progress` the number of tasks ended so far as they end.
pub(super) fn simulate_observed(
    scenario: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<SimOutcome, SimError> {
    scenario.check()?;
    let mut world = World::new(scenario)?;
    world.progress = Some(progress);
    world.run()?;
    Ok(world.outcome)
}

/// [`simulate`], with the control plane's journal of the run.
pub fn simulate_journaled(scenario: &Scenario) -> Result<(SimOutcome, Vec<Entry>), SimError> {
    scenario.check()?;
    let mut world = World::new(scenario)?;
    world.control.start_journal(&scenario.settings());
    world.run()?;
    let journal = world.control.take_journal();
    Ok((world.outcome, journal))
}

struct World<'a> {
    scenario: &'a Scenario,
    /// Told the number of tasks ended, as they end.
    progress: Option<&'a mut dyn FnMut(u64)>,
    /// Tasks ended so far.
    ended: u64,
    control: Control,
    rng: ChaCha8Rng,
    /// Due events, first in, first out at equal times (by `seq`, their sequence number).
    queue: EventQueue<u64, Event>,
    seq: u64,
    agents: BTreeMap<AgentId, SimAgent>,
    /// Application index of each submitted application id.
    apps: HashMap<AppId, usize>,
    /// Tasks not yet ended, per application index.
    open_tasks: Vec<u64>,
    submitted: usize,
    /// When the next round is due (a replan brings it forward).
    next_round_ms: u64,
    /// Whether a round is queued (with `skip_quiet_rounds`, none is while nothing happens).
    round_pending: bool,
    /// When the last round ran.
    last_round_ms: u64,
    /// When something last happened besides rounds and empty pulls.
    last_progress_ms: u64,
    outcome: SimOutcome,
}

/// Rounds without progress, and with nothing running or to come, after which the
/// simulation gives up: what is left can never run.
const ROUNDS_WITHOUT_PROGRESS: u64 = 10;

impl<'a> World<'a> {
    fn new(scenario: &'a Scenario) -> Result<Self, SimError> {
        let control = Control::new(&scenario.settings(), Default::default())?;
        let mut world = World {
            scenario,
            progress: None,
            ended: 0,
            control,
            rng: ChaCha8Rng::seed_from_u64(scenario.seed),
            queue: EventQueue::default(),
            seq: 0,
            agents: BTreeMap::new(),
            apps: HashMap::new(),
            open_tasks: scenario.apps.iter().map(|a| a.tasks).collect(),
            submitted: 0,
            next_round_ms: 0,
            round_pending: false,
            last_round_ms: 0,
            last_progress_ms: 0,
            outcome: SimOutcome::default(),
        };
        for (i, app) in scenario.apps.iter().enumerate() {
            world.push(app.submit_at_ms, Event::Submit(i));
        }
        for (p, platform) in scenario.platforms.iter().enumerate() {
            for (nth, &at) in platform.agents_at_ms.iter().enumerate() {
                world.push(at, Event::Join { platform: p, nth });
            }
        }
        if world.control.schedules() {
            world.round_pending = true;
            world.push(0, Event::Round);
        }
        Ok(world)
    }

    fn push(&mut self, at_ms: u64, event: Event) {
        self.seq += 1;
        self.queue.push(at_ms, self.seq, event);
    }

    fn done(&self) -> bool {
        self.submitted == self.scenario.apps.len() && self.open_tasks.iter().all(|&n| n == 0)
    }

    fn run(&mut self) -> Result<(), SimError> {
        while let Some((now, event)) = self.queue.pop() {
            if self.done() {
                break;
            }
            match event {
                Event::Submit(i) => self.submit(i, now)?,
                Event::Join { platform, nth } => self.join(platform, nth, now),
                Event::Pull(agent) => self.pull(agent, now),
                Event::End { agent, at } => self.end(agent, at, now),
                Event::Round if now == self.next_round_ms && self.round_pending => {
                    if self.stuck(now) {
                        break;
                    }
                    self.round(now);
                }
                Event::Round => {} // superseded by an earlier one
            }
            // Nothing is stored, and simulated agents poll by the clock: the effects go.
            let _ = self.control.take_effects();
        }
        if let Some(i) = (0..self.open_tasks.len()).find(|&i| self.open_tasks[i] > 0) {
            return Err(SimError::Stuck(self.scenario.apps[i].name.clone()));
        }
        Ok(())
    }

    /// Nothing runs, nothing is to come and no round has changed that for a while.
    fn stuck(&self, now: u64) -> bool {
        let interval = self.scenario.scheduler.interval_ms.max(1);
        let running = self.agents.values().any(|a| !a.running.is_empty());
        let to_come = self
            .queue
            .events()
            .any(|e| matches!(e, Event::Submit(_) | Event::Join { .. } | Event::End { .. }));
        !running
            && !to_come
            && now.saturating_sub(self.last_progress_ms) > ROUNDS_WITHOUT_PROGRESS * interval
    }

    /// Something that matters to scheduling changed: a round now.
    fn replan(&mut self, now: u64) {
        if self.control.schedules() && (now < self.next_round_ms || !self.round_pending) {
            self.next_round_ms = now;
            self.round_pending = true;
            self.push(now, Event::Round);
        }
    }

    /// Something happened: with `skip_quiet_rounds`, the next round on the interval grid
    /// is due if none is queued.
    fn touch(&mut self, now: u64) {
        if !self.scenario.skip_quiet_rounds || self.round_pending || !self.control.schedules() {
            return;
        }
        let interval = self.scenario.scheduler.interval_ms.max(1);
        let ticks = now
            .saturating_sub(self.last_round_ms)
            .div_ceil(interval)
            .max(1);
        let at = self
            .last_round_ms
            .saturating_add(ticks.saturating_mul(interval));
        self.next_round_ms = at;
        self.round_pending = true;
        self.push(at, Event::Round);
    }

    /// Idle agents' long polls wake up when work may have arrived.
    fn wake(&mut self, now: u64) {
        let idle: Vec<AgentId> = self
            .agents
            .iter()
            .filter(|(_, a)| a.idle)
            .map(|(id, _)| *id)
            .collect();
        for id in idle {
            self.push(now, Event::Pull(id));
        }
    }

    fn submit(&mut self, i: usize, now: u64) -> Result<(), SimError> {
        let app = &self.scenario.apps[i];
        let spec = spec_of(app);
        let template = spec.validate().map_err(|e| SimError::Spec {
            app: app.name.clone(),
            reason: e.to_string(),
        })?;
        let id = AppId(i as u64 + 1);
        self.apps.insert(id, i);
        self.control
            .submit(id, app.owner.clone(), spec, template, now);
        self.submitted += 1;
        self.last_progress_ms = now;
        self.wake(now);
        self.replan(now);
        Ok(())
    }

    fn join(&mut self, platform: usize, nth: usize, now: u64) {
        let p = &self.scenario.platforms[platform];
        let id = AgentId(self.agents.len() as u64 + 1);
        self.control.agent_joined(
            AgentJoin {
                agent: id,
                platform: p.name.clone(),
                hostname: format!("{}-{nth}", p.name),
                slots: p.slots,
                cores: p.slots,
                memory_mb: 0,
                batch_job_id: None,
                only_user: None,
                resources: Default::default(),
            },
            now,
        );
        self.agents.insert(
            id,
            SimAgent {
                platform,
                slots: p.slots,
                running: HashMap::new(),
                idle: false,
            },
        );
        self.last_progress_ms = now;
        self.push(now, Event::Pull(id));
        self.replan(now);
    }

    fn pull(&mut self, id: AgentId, now: u64) {
        let Some(agent) = self.agents.get(&id) else {
            return;
        };
        let used: u32 = agent.running.values().map(|r| r.1).sum();
        let free = agent.slots.saturating_sub(used);
        if free == 0 {
            return;
        }
        let batch = match self.control.lease(id, free, now) {
            Ok(batch) => batch,
            Err(_) => return,
        };
        let _ = self.control.heartbeat(id, now);
        // The slots each run takes here: a parallel run's share on its first host (the
        // other hosts' slots are the control plane's to hold), else the task's own cores.
        let attempts: Vec<(TaskAttempt, Option<u32>)> = batch
            .tasks
            .iter()
            .map(|t| {
                let at = TaskAttempt {
                    task: t.task,
                    attempt: t.attempt,
                };
                (at, t.hosts.first().map(|h| h.slots).or(t.cores))
            })
            .collect();
        let agent = self.agents.get_mut(&id).expect("present");
        agent.idle = attempts.is_empty();
        if attempts.is_empty() {
            return;
        }
        let platform = self.scenario.platforms[agent.platform].name.clone();
        self.last_progress_ms = now;
        self.touch(now);
        let started: Vec<TaskAttempt> = attempts.iter().map(|(at, _)| *at).collect();
        let _ = self.control.started(id, &started, now);
        for (at, share) in attempts {
            let i = self.apps[&at.task.app];
            let app = &self.scenario.apps[i];
            let mean_s = app.runtime_s.get(&platform).copied().unwrap_or(0.0);
            let cores = share.unwrap_or(app.cores);
            self.outcome
                .started_ms
                .entry(app.name.clone())
                .or_insert(now);
            *self
                .outcome
                .runs
                .entry(app.name.clone())
                .or_default()
                .entry(platform.clone())
                .or_insert(0) += 1;
            let wall_ms = (mean_s * 1000.0 * self.noise()).round().max(1.0) as u64;
            let agent = self.agents.get_mut(&id).expect("present");
            agent.running.insert(at, (at.task.app, cores, now));
            self.push(now.saturating_add(wall_ms), Event::End { agent: id, at });
        }
        // Like a live agent, it asks again at once while it has slots free.
        self.push(now, Event::Pull(id));
    }

    /// A log-normal factor of mean 1.
    fn noise(&mut self) -> f64 {
        let sigma = self.scenario.runtime_noise;
        if sigma == 0.0 {
            return 1.0;
        }
        // Box–Muller from the seeded RNG.
        let u1: f64 = self.rng.random_range(f64::EPSILON..1.0);
        let u2: f64 = self.rng.random();
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        (sigma * z - sigma * sigma / 2.0).exp()
    }

    fn end(&mut self, id: AgentId, at: TaskAttempt, now: u64) {
        let agent = self.agents.get_mut(&id).expect("an agent that ran a task");
        let Some((app, _, started)) = agent.running.remove(&at) else {
            return;
        };
        let co_runners: Vec<AppId> = {
            let set: HashSet<AppId> = agent
                .running
                .values()
                .map(|r| r.0)
                .filter(|a| *a != app)
                .collect();
            let mut v: Vec<AppId> = set.into_iter().collect();
            v.sort();
            v
        };
        let result = TaskResult::without_output(
            at,
            Outcome::Success,
            Measurements {
                started_at_ms: started,
                ended_at_ms: now,
                wall_ms: (now - started) as f64,
                user_cpu_ms: (now - started) as f64,
                sys_cpu_ms: 0.0,
                max_rss_kb: 0,
                co_runners,
                device_co_runners: Vec::new(),
            },
            None,
        );
        // Simulated agents run only what they were leased: a result that is no longer the
        // current lease (the agent was declared lost meanwhile) is a late result of theirs.
        let history = ReportHistory::from([(
            0,
            Some(StoredAttempt {
                agent: id,
                recorded: false,
                leased_ms: started,
            }),
        )]);
        let _ = self.control.record_report(id, vec![result], &history, now);
        // Its slots are free: progress, however long ago anything was last leased.
        self.last_progress_ms = now;
        let i = self.apps[&app];
        self.open_tasks[i] -= 1;
        if self.open_tasks[i] == 0 {
            self.outcome
                .finished_ms
                .insert(self.scenario.apps[i].name.clone(), now);
        }
        self.outcome.makespan_ms = self.outcome.makespan_ms.max(now);
        self.ended += 1;
        if let Some(progress) = self.progress.as_mut() {
            progress(self.ended);
        }
        self.touch(now);
        self.push(now, Event::Pull(id));
        self.wake(now);
    }

    fn round(&mut self, now: u64) {
        self.last_round_ms = now;
        self.round_pending = false;
        if let Some(job) = self.control.begin_round(&HashSet::new(), now) {
            let done = job.run();
            self.control.finish_round(done);
            self.outcome.rounds += 1;
            self.record_allocation(now);
        }
        // A new plan may free a task for an agent whose long poll found nothing (a
        // multi-core task TLPA moved); their polls come back meanwhile in the live system.
        self.wake(now);
        if self.scenario.skip_quiet_rounds {
            return;
        }
        let next = now + self.scenario.scheduler.interval_ms.max(1);
        self.next_round_ms = next;
        self.round_pending = true;
        self.push(next, Event::Round);
    }

    fn record_allocation(&mut self, now: u64) {
        let view = self.control.schedule_view();
        let record = AllocationRecord {
            at_ms: now,
            platforms: view.platforms.iter().map(|p| p.name.clone()).collect(),
            apps: view
                .apps
                .iter()
                .map(|a| (a.name.clone(), a.cores.clone()))
                .collect(),
        };
        let changed = self
            .outcome
            .allocations
            .last()
            .is_none_or(|last| last.platforms != record.platforms || last.apps != record.apps);
        if changed {
            self.outcome.allocations.push(record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::scenario::{ScenarioApp, ScenarioPlatform};
    use super::super::{replay, ReplayError};
    use super::*;
    use crate::control::journal::{Input, Output};
    use crate::control::{FairshareConfig, SchedulerConfig};

    /// `cpu` runs 6× faster on `fast`; `io` equally fast on both.
    fn scenario(policy: &str) -> Scenario {
        let app = |name: &str, fast: f64, slow: f64| ScenarioApp {
            name: name.into(),
            owner: name.into(),
            tasks: 200,
            cores: 1,
            submit_at_ms: 0,
            runtime_s: BTreeMap::from([("fast".into(), fast), ("slow".into(), slow)]),
            procs: None,
            timeout_s: None,
        };
        let platform = |name: &str| ScenarioPlatform {
            name: name.into(),
            agents_at_ms: vec![0, 500],
            slots: 2,
        };
        Scenario {
            scheduler: SchedulerConfig {
                policy: policy.parse().unwrap(),
                interval_ms: 100,
                ..SchedulerConfig::default()
            },
            fairshare: FairshareConfig::default(),
            lease_timeout_ms: 30_000,
            seed: 3,
            runtime_noise: 0.2,
            platforms: vec![platform("fast"), platform("slow")],
            apps: vec![app("io", 0.2, 0.2), app("cpu", 0.1, 0.6)],
            skip_quiet_rounds: false,
        }
    }

    #[test]
    fn the_allocation_follows_platform_affinity_and_every_task_runs() {
        let out = simulate(&scenario("pa-rr")).unwrap();
        assert_eq!(out.finished_ms.len(), 2);
        let total: u64 = out.runs.values().flat_map(|p| p.values()).sum();
        assert_eq!(total, 400);
        // Once measured, cpu gets most of fast's cores and io all of slow's: the
        // allocation that held longest says so.
        let held = |k: usize| {
            let end = out
                .allocations
                .get(k + 1)
                .map_or(out.makespan_ms, |r| r.at_ms);
            end.saturating_sub(out.allocations[k].at_ms)
        };
        let longest = &out.allocations[(0..out.allocations.len())
            .filter(|&k| out.allocations[k].apps.len() == 2)
            .max_by_key(|&k| held(k))
            .unwrap()];
        let cores = |name: &str| {
            longest
                .apps
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, c)| c.clone())
        };
        assert_eq!(longest.platforms, ["fast", "slow"]);
        let (cpu, io) = (cores("cpu").unwrap(), cores("io").unwrap());
        assert_eq!(cpu[1], 0, "cpu gets none of slow: {longest:?}");
        assert_eq!(io[1], 4, "io gets all of slow: {longest:?}");
        assert!(cpu[0] > io[0], "cpu gets most of fast: {longest:?}");
        assert!(
            out.runs["cpu"]["fast"] > out.runs["cpu"]["slow"] * 2,
            "{:?}",
            out.runs
        );
    }

    #[test]
    fn a_run_is_reproducible_and_its_journal_replays_decision_for_decision() {
        let (out, journal) = simulate_journaled(&scenario("paf")).unwrap();
        assert_eq!(out, simulate(&scenario("paf")).unwrap());
        let summary = replay(journal.clone()).unwrap();
        assert!(summary.leased_tasks >= 400, "{summary:?}");
        assert_eq!(summary.rounds, out.rounds as usize);

        // A journal whose recorded decision differs is caught at that line.
        let mut tampered = journal;
        let (line, entry) = tampered
            .iter_mut()
            .enumerate()
            .find(|(_, e)| matches!(&e.output, Some(Output::Leased(t)) if !t.is_empty()))
            .unwrap();
        if let Some(Output::Leased(tasks)) = &mut entry.output {
            tasks.pop();
        }
        match replay(tampered) {
            Err(ReplayError::Departed { line: l, .. }) => assert_eq!(l, line + 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_workload_no_agent_can_run_is_reported_not_looped_on() {
        let mut s = scenario("pa-rr");
        s.apps[1].cores = 8;
        match simulate(&s) {
            Err(SimError::Stuck(app)) => assert_eq!(app, "cpu"),
            other => panic!("{other:?}"),
        }
        s.apps[1].runtime_s.remove("slow");
        assert!(matches!(
            simulate(&s),
            Err(SimError::Scenario(ScenarioError::NoRuntime { .. }))
        ));
    }

    #[test]
    fn hostile_numbers_in_a_scenario_are_refused_naming_the_field() {
        let refused = |edit: &dyn Fn(&mut Scenario)| {
            let mut s = scenario("pa-rr");
            edit(&mut s);
            match simulate(&s) {
                Err(SimError::Scenario(e)) => e.to_string(),
                other => panic!("{other:?}"),
            }
        };
        assert!(refused(&|s| s.apps[0].tasks = u64::MAX).contains("app.io.tasks"));
        assert!(refused(&|s| s.platforms[1].slots = u32::MAX).contains("platform.slow.slots"));
        assert!(refused(&|s| s.apps[1].submit_at_ms = u64::MAX).contains("app.cpu.submit_at_ms"));
        assert!(refused(&|s| s.platforms[0].agents_at_ms = vec![0; 200_000])
            .contains("the number of agents"));
        assert!(refused(&|s| {
            s.apps[0].runtime_s.insert("fast".into(), f64::NAN);
        })
        .contains("runtime_s.fast"));
    }

    #[test]
    fn a_journal_with_hostile_entries_is_refused_not_obeyed() {
        let (_, journal) = simulate_journaled(&scenario("pa-rr")).unwrap();
        let at = journal
            .iter()
            .position(|e| matches!(e.input, Input::Submit { .. }))
            .unwrap();
        // 2^64 tasks: a replay would allocate them.
        let mut huge = journal.clone();
        if let Input::Submit { spec, .. } = &mut huge[at].input {
            spec.tasks = hetpilot_protocol::spec::TaskSource::Array {
                start: 0,
                end: u64::MAX,
            };
        }
        match replay(huge) {
            Err(ReplayError::Spec { line, reason, .. }) => {
                assert_eq!(line, at + 1);
                assert!(reason.contains("2^64 tasks"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let join = journal
            .iter()
            .position(|e| matches!(e.input, Input::AgentJoined { .. }))
            .unwrap();
        let mut wide = journal.clone();
        if let Input::AgentJoined { join, .. } = &mut wide[join].input {
            join.slots = u32::MAX;
        }
        assert!(matches!(replay(wide), Err(ReplayError::Slots { .. })));
        // Clocks that run backwards make a scenario, not a panic.
        let mut backwards = journal;
        if let Input::Submit { now_ms, .. } = &mut backwards[at].input {
            *now_ms = 0;
        }
        assert!(Scenario::from_journal(&backwards).is_ok());
    }
}
