//! `simulate live --swf`: a parallel-job trace (SWF) replayed through the live control
//! plane, to set beside `simulate alloc` on the same jobs and clusters.
//!
//! Each job becomes an application of one parallel task (`procs` = its processors,
//! submitted at its submit time, declaring as its timeout its longest run on the slowest
//! cluster, which is what backfilling trusts). Each cluster becomes a platform of
//! simulated agents (one per cluster, its slots the cluster's processors, or agents of a
//! given size), and a run lasts the job's runtime divided by its cluster's speed, as in
//! `simulate alloc`. Which cluster a run goes to is the control plane's own decision:
//! the round's placement with the `[scheduler] allocator` (TLPA, best fit, fastest first),
//! then the group reservation and lease. The outcome is summarised with the simulator's
//! own metrics ([`metrics_of`]).

use super::scenario::{Scenario, ScenarioApp, ScenarioPlatform};
use super::world::{simulate_observed, SimError};
use crate::alloc::outcome::{metrics_of, AllocRun, JobOutcome};
use crate::alloc::{validate_clusters, AllocError, AllocatorKind, Cluster, Job};
use crate::control::{FairshareConfig, LivePolicy, SchedulerConfig};
use crate::trace::SwfTrace;
use hetpilot_protocol::spec::MAX_TIMEOUT_SECS;
use std::collections::BTreeMap;

/// Most jobs one replay takes (each is an application of the control plane).
pub const MAX_TRACE_JOBS: usize = 100_000;
/// Latest submit time a replay takes, seconds (ten years).
const MAX_SUBMIT_S: f64 = 10.0 * 365.0 * 24.0 * 3600.0;
/// Most agents of all clusters together.
const MAX_AGENTS: u64 = 100_000;
/// Most slots of one agent (what the manager registers).
const MAX_AGENT_SLOTS: u32 = 4096;

/// How the live control plane is set up for a replay.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSettings {
    /// `[scheduler] policy`: the first level.
    pub policy: LivePolicy,
    /// `[scheduler] allocator`: `tlpa`, `bf` or `ff`.
    pub allocator: AllocatorKind,
    /// `[scheduler] tlpa_depth`.
    pub depth: usize,
    /// Slots of each agent; `None`: one agent per cluster with all its processors.
    pub agent_slots: Option<u32>,
    /// `[scheduler] interval_ms`.
    pub interval_ms: u64,
    /// `[scheduler] reservations` (EASY backfilling around wide tasks).
    pub reservations: bool,
    /// `[scheduler] seed`.
    pub seed: u64,
}

impl Default for TraceSettings {
    fn default() -> Self {
        let live = SchedulerConfig::default();
        TraceSettings {
            policy: live.policy,
            allocator: live.allocator,
            depth: live.tlpa_depth,
            agent_slots: None,
            interval_ms: live.interval_ms,
            reservations: live.reservations,
            seed: live.seed,
        }
    }
}

/// Why a trace cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A record whose field is out of what a replay takes.
    #[error("line {line} (job {job}): field {field} ({name}) = {value}: {problem}")]
    Record {
        /// The trace's line, from 1.
        line: usize,
        /// The job number (field 1).
        job: i64,
        /// The SWF field number.
        field: u8,
        /// What the field is.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What is wrong with it.
        problem: String,
    },
    /// A job (numbered as in the trace) whose time scaled to the load is out of range.
    #[error("job {job}: {problem}")]
    Job {
        /// The job number (field 1).
        job: i64,
        /// What is wrong.
        problem: String,
    },
    /// More jobs than a replay takes.
    #[error("{0} jobs are more than the {MAX_TRACE_JOBS} a live replay takes (use --limit)")]
    TooManyJobs(usize),
    /// Clusters that make no platform of agents.
    #[error("{0}")]
    Clusters(String),
    /// The clusters or jobs, as the simulator checks them.
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// The simulation of the control plane refused or could not finish.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// Refuses the first of the first `limit` records that become jobs (they ran, and have
/// processors) with a field a replay cannot take, naming its line and field: more
/// processors than the largest cluster, a run or requested time past the longest task
/// timeout on the slowest cluster, a submit time past ten years.
pub fn check_records(
    trace: &SwfTrace,
    clusters: &[Cluster],
    limit: usize,
) -> Result<(), TraceError> {
    validate_clusters(clusters)?;
    let largest = clusters.iter().map(|c| c.procs).max().unwrap_or(0);
    let slowest = clusters
        .iter()
        .map(|c| c.speed)
        .fold(f64::INFINITY, f64::min);
    let longest_s = MAX_TIMEOUT_SECS as f64 * slowest;
    let records = trace
        .jobs
        .iter()
        .filter(|r| r.run.is_some() && r.procs().is_some())
        .take(limit);
    for r in records {
        let refuse = |field: u8, name: &'static str, value: f64, problem: String| {
            Err(TraceError::Record {
                line: r.line,
                job: r.id,
                field,
                name,
                value,
                problem,
            })
        };
        let procs = r.procs().unwrap_or(0);
        if procs > largest {
            let (field, name) = if r.requested_procs.is_some_and(|p| p > 0) {
                (8, "requested processors")
            } else {
                (5, "allocated processors")
            };
            return refuse(
                field,
                name,
                f64::from(procs),
                format!("more than the largest cluster's {largest} processors"),
            );
        }
        let run = r.run.unwrap_or(0.0);
        if run > longest_s {
            return refuse(4, "run time", run, too_long(longest_s));
        }
        if let Some(requested) = r.requested_time.filter(|&t| t > longest_s) {
            return refuse(9, "requested time", requested, too_long(longest_s));
        }
        if r.submit > MAX_SUBMIT_S {
            return refuse(
                2,
                "submit time",
                r.submit,
                format!("past the {MAX_SUBMIT_S} s (ten years) a replay takes"),
            );
        }
    }
    Ok(())
}

fn too_long(longest_s: f64) -> String {
    format!(
        "past the longest task timeout ({MAX_TIMEOUT_SECS} s) on the slowest cluster \
         ({longest_s:.0} s of work)"
    )
}

/// The `simulate live` scenario of `jobs` (already scaled to their load) on `clusters`.
pub fn scenario_of(
    clusters: &[Cluster],
    jobs: &[Job],
    settings: &TraceSettings,
) -> Result<Scenario, TraceError> {
    crate::alloc::validate_jobs(clusters, jobs)?;
    if jobs.len() > MAX_TRACE_JOBS {
        return Err(TraceError::TooManyJobs(jobs.len()));
    }
    let platforms = platforms_of(clusters, settings.agent_slots)?;
    let slowest = clusters
        .iter()
        .map(|c| c.speed)
        .fold(f64::INFINITY, f64::min);
    let mut apps = Vec::with_capacity(jobs.len());
    for (k, job) in jobs.iter().enumerate() {
        if job.submit > MAX_SUBMIT_S {
            return Err(TraceError::Job {
                job: job.id,
                problem: format!(
                    "submitted at {:.0} s once scaled to the load, past the {MAX_SUBMIT_S} s \
                     (ten years) a replay takes",
                    job.submit
                ),
            });
        }
        let timeout_s = (job.estimate.max(job.runtime) / slowest).ceil().max(1.0);
        if timeout_s > MAX_TIMEOUT_SECS as f64 {
            return Err(TraceError::Job {
                job: job.id,
                problem: format!(
                    "runs up to {timeout_s:.0} s on the slowest cluster, past the longest \
                     task timeout ({MAX_TIMEOUT_SECS} s)"
                ),
            });
        }
        let runtime_s: BTreeMap<String, f64> = platforms
            .iter()
            .zip(clusters)
            .map(|(p, c)| (p.name.clone(), job.runtime_on(c)))
            .collect();
        apps.push(ScenarioApp {
            name: format!("job{k}"),
            owner: "trace".into(),
            tasks: 1,
            cores: 1,
            submit_at_ms: (job.submit * 1000.0).round() as u64,
            runtime_s,
            procs: Some(u64::from(job.procs)),
            timeout_s: Some(timeout_s as u64),
        });
    }
    Ok(Scenario {
        scheduler: SchedulerConfig {
            policy: settings.policy,
            interval_ms: settings.interval_ms,
            seed: settings.seed,
            tlpa_depth: settings.depth,
            allocator: settings.allocator,
            reservations: settings.reservations,
            ..SchedulerConfig::default()
        },
        fairshare: FairshareConfig::default(),
        lease_timeout_ms: 30_000,
        seed: settings.seed,
        runtime_noise: 0.0,
        platforms,
        apps,
        skip_quiet_rounds: true,
    })
}

/// One platform per cluster (`cluster1`, `cluster2`, ... in the order given), all its
/// agents there from the start.
fn platforms_of(
    clusters: &[Cluster],
    agent_slots: Option<u32>,
) -> Result<Vec<ScenarioPlatform>, TraceError> {
    let mut agents_in_all = 0u64;
    let mut platforms = Vec::with_capacity(clusters.len());
    for (i, c) in clusters.iter().enumerate() {
        let name = format!("cluster{}", i + 1);
        let slots = agent_slots.unwrap_or(c.procs);
        if slots == 0 || slots > MAX_AGENT_SLOTS {
            return Err(TraceError::Clusters(format!(
                "{name}: agents of {slots} slots (1-{MAX_AGENT_SLOTS}, --agent-slots)"
            )));
        }
        if c.procs % slots != 0 {
            return Err(TraceError::Clusters(format!(
                "{name}: its {} processors do not split into agents of {slots} slots \
                 (--agent-slots must divide every cluster's size)",
                c.procs
            )));
        }
        let agents = c.procs / slots;
        agents_in_all += u64::from(agents);
        if agents_in_all > MAX_AGENTS {
            return Err(TraceError::Clusters(format!(
                "more than {MAX_AGENTS} agents in all (--agent-slots is too small)"
            )));
        }
        platforms.push(ScenarioPlatform {
            name,
            agents_at_ms: vec![0; agents as usize],
            slots,
        });
    }
    Ok(platforms)
}

/// Replays `jobs` (scaled to their load) on `clusters` through the live control plane;
/// `progress` is told the number of jobs ended as they end. The outcome per job: the
/// cluster it ran on, when it started and ended (seconds, the trace's clock).
pub fn replay_trace(
    clusters: &[Cluster],
    jobs: &[Job],
    settings: &TraceSettings,
    progress: &mut dyn FnMut(u64),
) -> Result<AllocRun, TraceError> {
    let scenario = scenario_of(clusters, jobs, settings)?;
    let out = simulate_observed(&scenario, progress)?;
    let index: BTreeMap<&str, usize> = scenario
        .platforms
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.as_str(), i))
        .collect();
    let outcomes: Vec<JobOutcome> = scenario
        .apps
        .iter()
        .map(|app| {
            let ran_on = out
                .runs
                .get(&app.name)
                .and_then(|r| r.keys().next())
                .and_then(|p| index.get(p.as_str()))
                .copied()
                .unwrap_or(0);
            let seconds = |ms: Option<&u64>| ms.map_or(0.0, |&ms| ms as f64 / 1000.0);
            JobOutcome {
                cluster: ran_on,
                start: seconds(out.started_ms.get(&app.name)),
                end: seconds(out.finished_ms.get(&app.name)),
            }
        })
        .collect();
    let metrics = metrics_of(clusters, jobs, &outcomes);
    Ok(AllocRun { outcomes, metrics })
}
