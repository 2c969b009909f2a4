//! Replay of a trace through one queue ordered by fairshare priority, without backfilling
//! (Section 4, Fig. 5 of the multi-resource fairshare paper): only the job at the head may
//! start; the head is the oldest waiting job of the user with the smallest decayed usage per
//! share. Usage is charged when a job starts (requested walltime) and corrected when it ends
//! (real walltime), so priorities move as in the paper's TORQUE (Section 3.4).
//!
//! Placement is node-level: each machine has `nodes` nodes with free CPUs and RAM; a job's
//! node requests take nodes of suitable machines first-fit (exclusive requests take whole
//! idle nodes), in the platform's order or fastest / slowest machine first
//! ([`Placement`]). Jobs run for their recorded runtime, or, with
//! `runtime_scales_with_speed`, for it divided by the slowest used machine's speed (the
//! paper's Section 3.2 assumption that walltime is inversely proportional to SPEC, with the
//! recorded runtime taken as the work at speed 1). Walltime normalization only changes the
//! charge, and is off unless asked, as in the paper's Fig. 5 experiment.

use hetpilot_core::event_queue::EventQueue;
use std::collections::{BTreeMap, VecDeque};

use super::alloc::BOUNDED_SLOWDOWN_TAU;
use super::fairshare::FairshareJob;
use hetpilot_core::fairshare::{
    effective_usage, JobStart, MachinePool, PenaltyError, PenaltyFunction, Shares, UsageError,
    UsageLedger,
};

/// Why a replay cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// A job's penalty could not be computed.
    #[error("job {id}: {source}")]
    Penalty {
        /// The job's number.
        id: i64,
        /// Why.
        #[source]
        source: PenaltyError,
    },
    /// The usage ledger refused a start or an end.
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// A job that does not fit the platform even when every node is free.
    #[error(
        "job {id} can never be placed on the platform's free nodes; drop it from the workload"
    )]
    Unplaceable {
        /// The job's number.
        id: i64,
    },
}

/// Settings of a replay.
pub struct QueueReplay<'a> {
    /// The machines whose nodes the jobs are placed on.
    pub platform: &'a MachinePool,
    /// P(j), the penalty each job's usage is charged with.
    pub penalty: &'a dyn PenaltyFunction,
    /// Decay half-life, seconds (None: no decay).
    pub half_life: Option<f64>,
    /// Per-user shares the priority divides usage by.
    pub shares: &'a Shares,
    /// Multiply walltimes by the (slowest) used machine's speed (eq. 9).
    pub normalize_walltime: bool,
    /// A job runs its recorded runtime / the slowest used machine's speed (else the
    /// recorded runtime wherever it runs).
    pub runtime_scales_with_speed: bool,
    /// Which nodes first-fit tries first.
    pub placement: Placement,
}

/// The order in which first-fit tries the nodes: a stand-in for the scheduler decisions
/// that walltime normalization should make irrelevant to the charge (Section 3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The platform file's order.
    FileOrder,
    /// Nodes of faster machines first (ties in file order).
    FastestFirst,
    /// Nodes of slower machines first (ties in file order).
    SlowestFirst,
}

/// When a job waited and ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueOutcome {
    pub(crate) start: f64,
    /// When it ended, seconds on the trace's clock.
    pub end: f64,
}

impl QueueOutcome {
    /// Time `job` waited in the queue (start − submit), seconds.
    pub fn wait(&self, job: &FairshareJob) -> f64 {
        self.start - job.submit
    }

    /// max(1, (wait + run) / max(run, τ)).
    pub fn bounded_slowdown(&self, job: &FairshareJob) -> f64 {
        ((self.end - job.submit) / (self.end - self.start).max(BOUNDED_SLOWDOWN_TAU)).max(1.0)
    }
}

/// Outcomes in job order, and the usage ledger as it stands after the last job.
#[derive(Debug, Clone)]
pub struct QueueReplayResult {
    /// One outcome per job, in job order.
    pub outcomes: Vec<QueueOutcome>,
    /// The usage ledger after the last job ended.
    pub ledger: UsageLedger,
}

#[derive(Debug, Clone)]
struct Node {
    machine: usize,
    free_cpus: u32,
    free_ram: u64,
    cpus: u32,
    ram: u64,
}

/// Replay `jobs` (every job must be satisfiable on the platform, as `fairshare_jobs`
/// guarantees).
pub fn replay_fairshare_queue(
    settings: &QueueReplay,
    jobs: &[FairshareJob],
    progress: &mut dyn FnMut(usize),
) -> Result<QueueReplayResult, ReplayError> {
    let penalties: Vec<f64> = jobs
        .iter()
        .map(|j| {
            settings
                .penalty
                .penalty(settings.platform, &j.request)
                .map_err(|source| ReplayError::Penalty { id: j.id, source })
        })
        .collect::<Result<_, _>>()?;
    let mut nodes: Vec<Node> = Vec::new();
    for (i, m) in settings.platform.machines().iter().enumerate() {
        for _ in 0..m.nodes {
            nodes.push(Node {
                machine: i,
                free_cpus: m.cpus_per_node,
                free_ram: m.ram_per_node,
                cpus: m.cpus_per_node,
                ram: m.ram_per_node,
            });
        }
    }
    let speed_of = |n: &Node| settings.platform.machines()[n.machine].speed;
    match settings.placement {
        Placement::FileOrder => {}
        Placement::FastestFirst => nodes.sort_by(|a, b| speed_of(b).total_cmp(&speed_of(a))),
        Placement::SlowestFirst => nodes.sort_by(|a, b| speed_of(a).total_cmp(&speed_of(b))),
    }
    let mut arrivals: Vec<usize> = (0..jobs.len()).collect();
    arrivals.sort_by(|&a, &b| jobs[a].submit.total_cmp(&jobs[b].submit).then(a.cmp(&b)));
    let mut ledger = UsageLedger::new(settings.half_life);
    let mut per_user: BTreeMap<&str, VecDeque<usize>> = BTreeMap::new();
    let mut placed: Vec<Vec<(usize, u32, u64)>> = vec![Vec::new(); jobs.len()];
    // Running jobs by end time, ties by job index.
    let mut ends: EventQueue<f64, usize> = EventQueue::default();
    let mut walltimes = vec![0.0; jobs.len()];
    let mut outcomes = vec![
        QueueOutcome {
            start: 0.0,
            end: 0.0
        };
        jobs.len()
    ];
    let (mut next, mut started) = (0usize, 0usize);
    let mut blocked: Option<usize> = None;
    while started < jobs.len() {
        let arrival = arrivals.get(next).map(|&j| jobs[j].submit);
        let end = ends.peek().map(|(end, _)| end);
        let now = match (arrival, end) {
            (Some(a), Some(e)) => a.min(e),
            (Some(a), None) => a,
            (None, Some(e)) => e,
            (None, None) => {
                // Nothing runs and nothing arrives, yet the head cannot start: it never will.
                return Err(ReplayError::Unplaceable {
                    id: blocked.map_or(-1, |j| jobs[j].id),
                });
            }
        };
        while let Some((end, &j)) = ends.peek() {
            if end > now {
                break;
            }
            ends.pop();
            for &(n, cpus, ram) in &placed[j] {
                nodes[n].free_cpus += cpus;
                nodes[n].free_ram += ram;
            }
            ledger.finish(j as u64, walltimes[j])?;
        }
        while let Some(&j) = arrivals.get(next) {
            if jobs[j].submit > now {
                break;
            }
            per_user
                .entry(jobs[j].user.as_str())
                .or_default()
                .push_back(j);
            next += 1;
        }
        loop {
            let head = per_user
                .iter()
                .filter_map(|(user, q)| {
                    q.front().map(|&j| {
                        (
                            effective_usage(&ledger, settings.shares, user, now),
                            jobs[j].submit,
                            j,
                        )
                    })
                })
                .min_by(|a, b| {
                    a.0.total_cmp(&b.0)
                        .then(a.1.total_cmp(&b.1))
                        .then(a.2.cmp(&b.2))
                });
            let Some((_, _, j)) = head else { break };
            let Some(taken) = place(settings.platform, &mut nodes, &jobs[j]) else {
                blocked = Some(j);
                break;
            };
            let user = jobs[j].user.as_str();
            per_user.get_mut(user).map(VecDeque::pop_front);
            // SPEC_j: the slowest used machine's speed (eq. 9).
            let slowest = taken
                .iter()
                .map(|&(n, _, _)| speed_of(&nodes[n]))
                .fold(f64::INFINITY, f64::min);
            ledger.start(JobStart {
                job: j as u64,
                user: user.to_string(),
                penalty: penalties[j],
                speed: if settings.normalize_walltime {
                    slowest
                } else {
                    1.0
                },
                requested_walltime: jobs[j].walltime_limit,
                start: now,
            })?;
            walltimes[j] = if settings.runtime_scales_with_speed {
                jobs[j].runtime / slowest
            } else {
                jobs[j].runtime
            };
            let end = now + walltimes[j];
            outcomes[j] = QueueOutcome { start: now, end };
            ends.push(end, j as u64, j);
            placed[j] = taken;
            started += 1;
            if started.is_multiple_of(512) {
                progress(started);
            }
        }
    }
    // The last jobs started; their real walltimes replace the requested ones in the ledger.
    while let Some((_, j)) = ends.pop() {
        ledger.finish(j as u64, walltimes[j])?;
    }
    progress(started);
    Ok(QueueReplayResult { outcomes, ledger })
}

/// Take nodes for every node request of `job`, or nothing when some request cannot be met now.
fn place(
    platform: &MachinePool,
    nodes: &mut [Node],
    job: &FairshareJob,
) -> Option<Vec<(usize, u32, u64)>> {
    let mut taken: Vec<(usize, u32, u64)> = Vec::new();
    for request in &job.request.nodes {
        let mut need = request.count;
        for (n, node) in nodes.iter_mut().enumerate() {
            if need == 0 {
                break;
            }
            let m = &platform.machines()[node.machine];
            if !(request.fits(m) && job.request.speed_ok(m)) {
                continue;
            }
            let (cpus, ram) = if request.exclusive {
                (node.cpus, node.ram)
            } else {
                (request.cpus, request.ram)
            };
            if node.free_cpus >= cpus && node.free_ram >= ram {
                node.free_cpus -= cpus;
                node.free_ram -= ram;
                taken.push((n, cpus, ram));
                need -= 1;
            }
        }
        if need > 0 {
            for &(n, cpus, ram) in &taken {
                nodes[n].free_cpus += cpus;
                nodes[n].free_ram += ram;
            }
            return None;
        }
    }
    Some(taken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_core::fairshare::{CpuOnly, JobRequest, Machine, MultiResource};

    const GB: u64 = 1 << 30;

    fn job(id: i64, user: &str, submit: f64, runtime: f64, cpus: u32, ram: u64) -> FairshareJob {
        FairshareJob {
            id,
            user: user.into(),
            submit,
            runtime,
            walltime_limit: runtime,
            request: JobRequest::uniform(1, cpus, ram, 0),
        }
    }

    /// A replay with no decay, no walltime normalization, jobs placed in file order.
    fn plain<'a>(
        platform: &'a MachinePool,
        penalty: &'a dyn PenaltyFunction,
        shares: &'a Shares,
    ) -> QueueReplay<'a> {
        QueueReplay {
            platform,
            penalty,
            half_life: None,
            shares,
            normalize_walltime: false,
            runtime_scales_with_speed: false,
            placement: Placement::FileOrder,
        }
    }

    #[test]
    fn a_job_that_can_never_be_placed_is_an_error_not_a_hang() {
        let platform = MachinePool::new(vec![
            Machine::new("a", 1, 4, 16 * GB),
            Machine::new("b", 1, 4, 16 * GB),
        ])
        .unwrap();
        // Two one-node groups, both pinned to machine "a", which has a single node: each
        // group alone is suitable (so the penalty exists), together they can never start.
        let mut request = JobRequest::uniform(1, 4, GB, 0);
        request.nodes.push(request.nodes[0].clone());
        request.nodes.iter_mut().for_each(|n| {
            n.constraints = vec![hetpilot_core::fairshare::Constraint::Property(
                "cl_a".into(),
            )]
        });
        let jobs = vec![FairshareJob {
            id: 42,
            user: "u".into(),
            submit: 0.0,
            runtime: 1.0,
            walltime_limit: 1.0,
            request,
        }];
        let shares = Shares::default();
        let settings = plain(&platform, &CpuOnly, &shares);
        let err = replay_fairshare_queue(&settings, &jobs, &mut |_| {}).unwrap_err();
        assert_eq!(err, ReplayError::Unplaceable { id: 42 });
    }

    #[test]
    fn the_lighter_user_goes_first_and_penalty_choice_matters() {
        let platform = MachinePool::new(vec![Machine::new("m", 1, 4, 16 * GB)]).unwrap();
        // t=0: "mem" runs 1 CPU with all 16 GB, so "cpu"'s job waits for RAM until t=10.
        // From t=10 both users have one more 4-CPU job waiting: who goes first is fairshare.
        let jobs = vec![
            job(0, "mem", 0.0, 10.0, 1, 16 * GB),
            job(1, "cpu", 0.0, 10.0, 2, GB),
            job(2, "mem", 1.0, 10.0, 4, GB),
            job(3, "cpu", 2.0, 10.0, 4, GB),
        ];
        let shares = Shares::default();
        let run = |penalty: &dyn PenaltyFunction| {
            let settings = plain(&platform, penalty, &shares);
            replay_fairshare_queue(&settings, &jobs, &mut |_| {})
                .unwrap()
                .outcomes
        };
        // CPU-only: "mem" was charged 1 CPU x 10 s, "cpu" 2 CPUs x 10 s -> "mem" goes next.
        let cpu = run(&CpuOnly);
        assert_eq!(cpu[1].start, 10.0);
        assert_eq!(cpu[2].start, 20.0);
        assert_eq!(cpu[3].start, 30.0);
        // Multi-resource: "mem" occupied the whole node (PE 4) -> "cpu" goes next.
        let multi = run(&MultiResource);
        assert_eq!(multi[3].start, 20.0);
        assert_eq!(multi[2].start, 30.0);
        assert!(multi
            .iter()
            .zip(&jobs)
            .all(|(o, j)| o.wait(j) >= 0.0 && o.bounded_slowdown(j) >= 1.0));
    }

    #[test]
    fn every_job_is_charged_its_real_walltime_at_the_end() {
        let platform = MachinePool::new(vec![Machine::new("m", 1, 4, 16 * GB)]).unwrap();
        // Requested 100 s, ran 10 s: the last job is still running when it starts, and its
        // stand-in charge must still be replaced.
        let mut jobs = vec![job(0, "a", 0.0, 10.0, 4, GB), job(1, "a", 1.0, 10.0, 4, GB)];
        jobs.iter_mut().for_each(|j| j.walltime_limit = 100.0);
        let shares = Shares::default();
        let settings = plain(&platform, &CpuOnly, &shares);
        let result = replay_fairshare_queue(&settings, &jobs, &mut |_| {}).unwrap();
        assert_eq!(result.ledger.running_jobs(), 0);
        assert_eq!(result.ledger.usage("a", 1e9), 2.0 * 10.0 * 4.0);
    }
}
