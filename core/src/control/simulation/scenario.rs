//! A `simulate live` scenario: the platforms (how many agents of how many slots, after
//! what batch-queue wait), the applications (tasks, cores, owner, when submitted) and how
//! long each application's task runs on each platform. Written by hand as TOML, or taken
//! from a live manager's journal: the same applications and agents, with the runtimes the
//! live run measured.

use super::super::journal::{Entry, Input, Output};
use super::super::{ControlSettings, FairshareConfig, ResultClass, SchedulerConfig};
use hetpilot_protocol::protocol::Outcome;
use hetpilot_protocol::spec::{AppSpec, TaskSource};
use hetpilot_protocol::{AgentId, AppId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// A whole `simulate live` scenario (see the module doc).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The `[scheduler]` section, as in the manager's configuration.
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    #[serde(default)]
    pub(crate) fairshare: FairshareConfig,
    /// An agent silent this long is lost (simulated agents never are).
    #[serde(default = "default_lease_timeout_ms")]
    pub(crate) lease_timeout_ms: u64,
    /// Seeds the runtimes' noise (the scheduler has its own `[scheduler] seed`).
    #[serde(default)]
    pub(crate) seed: u64,
    /// Each run's wall time is its mean × a log-normal factor of this σ (0: exact).
    #[serde(default)]
    pub(crate) runtime_noise: f64,
    /// The `[[platform]]` tables: each platform's agents.
    #[serde(rename = "platform")]
    pub platforms: Vec<ScenarioPlatform>,
    /// The `[[app]]` tables: the applications, in submission order for equal times.
    #[serde(rename = "app")]
    pub apps: Vec<ScenarioApp>,
    /// Rounds run only when something happened since the last one (a submission, an
    /// agent, a lease, an end), still on the `interval_ms` grid: a round of an unchanged
    /// state decides what the last one did, and a trace spanning weeks would otherwise
    /// run a round per simulated second. Set by trace replays, not by scenario files.
    #[serde(skip)]
    pub(crate) skip_quiet_rounds: bool,
}

fn default_lease_timeout_ms() -> u64 {
    30_000
}

/// One platform's agents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioPlatform {
    /// The platform's name (the key of each application's `runtime_s`).
    pub name: String,
    /// When each agent joins (ms from the start): a pilot's batch-queue wait.
    pub(crate) agents_at_ms: Vec<u64>,
    pub(crate) slots: u32,
}

/// One application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioApp {
    /// The application's name, unique in the scenario.
    pub name: String,
    #[serde(default = "default_owner")]
    pub(crate) owner: String,
    pub(crate) tasks: u64,
    #[serde(default = "one")]
    pub(crate) cores: u32,
    #[serde(default)]
    pub(crate) submit_at_ms: u64,
    /// Mean wall time of one task on each platform, seconds.
    pub(crate) runtime_s: BTreeMap<String, f64>,
    /// A parallel application's processors per run, over agents of one platform
    /// (`procs` of the spec; `cores` is then 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) procs: Option<u64>,
    /// The declared timeout of each task, seconds (what backfilling trusts as its length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_s: Option<u64>,
}

fn default_owner() -> String {
    "user".into()
}

fn one() -> u32 {
    1
}

/// Why a scenario cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// An application without a runtime on one of the platforms.
    #[error("application `{app}` has no runtime on platform `{platform}` (runtime_s.{platform})")]
    NoRuntime {
        /// The application's name.
        app: String,
        /// The platform's name.
        platform: String,
    },
    /// A runtime that is negative or not finite.
    #[error("application `{app}`: runtime_s.{platform} = {value} is not a duration in seconds")]
    BadRuntime {
        /// The application's name.
        app: String,
        /// The platform's name.
        platform: String,
        /// The runtime given.
        value: f64,
    },
    /// A platform (named) whose agents have no slot.
    #[error("platform `{0}` has agents of 0 slots")]
    NoSlots(String),
    /// An application (named) whose tasks need no core.
    #[error("application `{0}` has tasks of 0 cores")]
    NoCores(String),
    /// A number past what a simulation takes (what it is, its value, the largest allowed).
    #[error("{what} = {value} is more than the {max} a simulation takes")]
    OutOfRange {
        /// The field, e.g. `app.sweep.tasks`.
        what: String,
        /// Its value.
        value: u64,
        /// The largest value allowed.
        max: u64,
    },
    /// A `runtime_noise` σ outside 0-2.
    #[error("runtime_noise {0} is not in 0-2")]
    Noise(f64),
    /// A journal that cannot give a scenario: no `open` line, or a restarted manager's.
    #[error("the journal has no `open` line, or starts from a restarted manager's state")]
    NoOpen,
    /// A journal's application that never ran on a platform, so its runtime there is
    /// unknown (the application, the platform's name).
    #[error("the journal's application {0} never ran a task on platform `{1}`: its runtime there is unknown")]
    Unmeasured(AppId, String),
}

/// Most tasks of one application (the manager's default `quotas.tasks_per_submit`).
pub(crate) const MAX_TASKS: u64 = 10_000_000;
/// Most slots of one agent (what the manager registers).
pub(crate) const MAX_SLOTS: u64 = 4096;
/// Most agents in all.
const MAX_AGENTS: u64 = 100_000;
/// Latest submission or arrival: ten years, in ms.
const MAX_AT_MS: u64 = 10 * 365 * 24 * 3600 * 1000;

/// `value` if it is at most `max`.
fn at_most(what: impl FnOnce() -> String, value: u64, max: u64) -> Result<(), ScenarioError> {
    if value > max {
        return Err(ScenarioError::OutOfRange {
            what: what(),
            value,
            max,
        });
    }
    Ok(())
}

impl Scenario {
    pub(crate) fn check(&self) -> Result<(), ScenarioError> {
        if !(0.0..=2.0).contains(&self.runtime_noise) {
            return Err(ScenarioError::Noise(self.runtime_noise));
        }
        let agents: u64 = self
            .platforms
            .iter()
            .map(|p| p.agents_at_ms.len() as u64)
            .sum();
        at_most(|| "the number of agents".into(), agents, MAX_AGENTS)?;
        for p in &self.platforms {
            if p.slots == 0 {
                return Err(ScenarioError::NoSlots(p.name.clone()));
            }
            at_most(
                || format!("platform.{}.slots", p.name),
                p.slots.into(),
                MAX_SLOTS,
            )?;
            for &at in &p.agents_at_ms {
                at_most(
                    || format!("platform.{}.agents_at_ms", p.name),
                    at,
                    MAX_AT_MS,
                )?;
            }
        }
        for a in &self.apps {
            if a.cores == 0 {
                return Err(ScenarioError::NoCores(a.name.clone()));
            }
            at_most(|| format!("app.{}.tasks", a.name), a.tasks, MAX_TASKS)?;
            at_most(
                || format!("app.{}.submit_at_ms", a.name),
                a.submit_at_ms,
                MAX_AT_MS,
            )?;
            for p in &self.platforms {
                match a.runtime_s.get(&p.name) {
                    None => {
                        return Err(ScenarioError::NoRuntime {
                            app: a.name.clone(),
                            platform: p.name.clone(),
                        })
                    }
                    Some(&v) if !(0.0..1e9).contains(&v) => {
                        return Err(ScenarioError::BadRuntime {
                            app: a.name.clone(),
                            platform: p.name.clone(),
                            value: v,
                        })
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    /// What the control plane is configured with.
    pub(crate) fn settings(&self) -> ControlSettings {
        ControlSettings {
            scheduler: self.scheduler.clone(),
            fairshare: self.fairshare.clone(),
            lease_timeout_ms: self.lease_timeout_ms,
            heartbeats_per_second: None,
            store_io_mib_per_s: HashMap::new(),
        }
    }

    /// The live run a journal records, as a scenario: its settings, its applications
    /// (submitted at the same offsets), its agents (joining at the same offsets) and, for
    /// each application and platform, the mean wall time of the successful runs measured
    /// there.
    pub fn from_journal(entries: &[Entry]) -> Result<Scenario, ScenarioError> {
        let settings = match entries.first().map(|e| &e.input) {
            Some(Input::Open {
                settings,
                restored: false,
            }) => settings.clone(),
            _ => return Err(ScenarioError::NoOpen),
        };
        let start = entries
            .iter()
            .find_map(|e| input_time(&e.input))
            .unwrap_or(0);
        let mut apps: Vec<(AppId, ScenarioApp)> = Vec::new();
        let mut platforms: BTreeMap<String, ScenarioPlatform> = BTreeMap::new();
        let mut agent_platform: HashMap<AgentId, String> = HashMap::new();
        let mut walls: HashMap<(AppId, String), (f64, u64)> = HashMap::new();
        for e in entries {
            match &e.input {
                Input::Submit {
                    app,
                    owner,
                    spec,
                    now_ms,
                    ..
                } => apps.push((*app, app_of(spec, owner, now_ms.saturating_sub(start)))),
                Input::AgentJoined { join, now_ms } => {
                    agent_platform.insert(join.agent, join.platform.clone());
                    let p = platforms.entry(join.platform.clone()).or_insert_with(|| {
                        ScenarioPlatform {
                            name: join.platform.clone(),
                            agents_at_ms: Vec::new(),
                            slots: join.slots,
                        }
                    });
                    p.agents_at_ms.push(now_ms.saturating_sub(start));
                }
                Input::Report { agent, results, .. } => {
                    // Only what was recorded, and only once.
                    let (Some(platform), Some(Output::Recorded(classes))) =
                        (agent_platform.get(agent), &e.output)
                    else {
                        continue;
                    };
                    for (r, class) in results.iter().zip(classes) {
                        if *class != ResultClass::Duplicate && r.outcome == Outcome::Success {
                            let w = walls.entry((r.task.app, platform.clone())).or_default();
                            w.0 += r.measurements.wall_ms / 1000.0;
                            w.1 += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (id, mut app) in apps {
            for p in platforms.keys() {
                let (sum, n) = walls
                    .get(&(id, p.clone()))
                    .copied()
                    .ok_or_else(|| ScenarioError::Unmeasured(id, p.clone()))?;
                app.runtime_s.insert(p.clone(), sum / n as f64);
            }
            out.push(app);
        }
        Ok(Scenario {
            scheduler: settings.scheduler,
            fairshare: settings.fairshare,
            lease_timeout_ms: settings.lease_timeout_ms,
            seed: 0,
            runtime_noise: 0.0,
            platforms: platforms.into_values().collect(),
            apps: out,
            skip_quiet_rounds: false,
        })
    }
}

/// The scenario application a submitted spec describes.
fn app_of(spec: &AppSpec, owner: &str, submit_at_ms: u64) -> ScenarioApp {
    ScenarioApp {
        name: spec.name.clone(),
        owner: owner.to_string(),
        tasks: spec.tasks.count().unwrap_or(0),
        cores: spec.cores,
        submit_at_ms,
        runtime_s: BTreeMap::new(),
        procs: spec.procs,
        timeout_s: spec.timeout_secs,
    }
}

/// The clock of an input, for those that carry one.
fn input_time(input: &Input) -> Option<u64> {
    match input {
        Input::Submit { now_ms, .. }
        | Input::AgentJoined { now_ms, .. }
        | Input::Lease { now_ms, .. }
        | Input::Started { now_ms, .. }
        | Input::Heartbeat { now_ms, .. }
        | Input::Reconcile { now_ms, .. }
        | Input::Report { now_ms, .. }
        | Input::Expire { now_ms }
        | Input::Deregister { now_ms, .. }
        | Input::PilotEnded { now_ms, .. }
        | Input::RoundBegan { now_ms, .. } => Some(*now_ms),
        _ => None,
    }
}

/// The spec a scenario application is submitted as (an array of no-op commands).
pub(super) fn spec_of(app: &ScenarioApp) -> AppSpec {
    AppSpec {
        name: app.name.clone(),
        command: "true".into(),
        tasks: TaskSource::Array {
            start: 1,
            end: app.tasks,
        },
        cores: app.cores,
        memory_mb: 0,
        env: Default::default(),
        workdir: None,
        max_attempts: 1,
        timeout_secs: app.timeout_s,
        output_dir: None,
        inputs: Vec::new(),
        outputs: Vec::new(),
        data_intensive: false,
        dag: None,
        gpus: None,
        resources: Default::default(),
        nodes: None,
        procs: app.procs,
        variants: Vec::new(),
    }
}
