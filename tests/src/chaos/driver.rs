//! The chaos driver: one long run of many short tasks during which it
//! 1. SIGKILLs the manager and an agent together, restarts the manager on its port and
//!    starts a fresh agent;
//! 2. partitions some agents from the manager (through a [`FaultProxy`]) for longer than a
//!    lease, then heals the partition;
//! 3. slows the manager's disk (a [`SlowDisk`] write-IOPS limit) for a while.
//!
//! Each fault starts once a given share of the tasks is done. At the end it checks, from
//! the store and from a log each task appends its index to, that every task ended exactly
//! once: one recorded success per task, every index run, and a task run more than once
//! only where an attempt of it was lost. The figures go into a [`ChaosReport`].

use super::proxy::FaultProxy;
use super::slow_disk::SlowDisk;
use crate::{array_app, poll_until, signal, Agent, Manager};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// What a run does; fixed before it starts.
#[derive(Clone, Debug)]
pub struct ChaosPlan {
    pub tasks: u64,
    /// Agents that reach the manager through the proxy (partitioned in fault 2).
    pub proxied_agents: u32,
    /// Agents that reach it directly (they carry on through the partition).
    pub direct_agents: u32,
    pub slots_per_proxied_agent: u32,
    pub slots_per_direct_agent: u32,
    /// How long each task sleeps after logging its index (0: not at all).
    pub task_sleep_ms: u32,
    pub lease_timeout_secs: f64,
    /// How long the partition lasts: longer than a lease, so leases expire during it.
    pub partition_secs: f64,
    pub slow_disk_secs: f64,
    pub slow_disk_write_iops: u32,
    /// The shares of tasks done at which faults 1, 2 and 3 start.
    pub fault_at: [f64; 3],
    /// The whole run's bound.
    pub deadline: Duration,
}

impl ChaosPlan {
    /// A run of 3,000 tasks of 10 ms, three faults (the CI test's, and the benchmark's
    /// `tiny`): two proxied agents of 4 slots and a direct one of 1 (so work is left after
    /// the partition), lease timeout 3 s, partition 5 s, slow disk 3 s at 20 writes/s.
    pub fn small() -> ChaosPlan {
        ChaosPlan {
            tasks: 3_000,
            proxied_agents: 2,
            direct_agents: 1,
            slots_per_proxied_agent: 4,
            slots_per_direct_agent: 1,
            task_sleep_ms: 10,
            lease_timeout_secs: 3.0,
            partition_secs: 5.0,
            slow_disk_secs: 3.0,
            slow_disk_write_iops: 20,
            fault_at: [0.15, 0.4, 0.65],
            deadline: Duration::from_secs(600),
        }
    }
}

/// One fault as it happened.
#[derive(Debug)]
pub struct FaultRecord {
    pub fault: &'static str,
    /// Tasks done when it started.
    pub done_at_start: u64,
    /// Seconds from the run's start.
    pub started_s: f64,
    /// How long it lasted (the manager's restart included for a kill).
    pub lasted_s: f64,
    /// Tasks done while it lasted.
    pub done_during: u64,
    /// Seconds from its end to the next task done (`None`: none came within the bound).
    pub recovered_s: Option<f64>,
}

/// What a run measured and checked.
#[derive(Debug)]
pub struct ChaosReport {
    pub tasks: u64,
    pub wall_s: f64,
    pub faults: Vec<FaultRecord>,
    /// Why the slow disk could not be applied here, if it could not.
    pub slow_disk_skipped: Option<String>,
    /// Writes the manager made through the slow disk's limit (its cgroup's counter).
    pub slow_disk_writes: Option<u64>,
    /// Attempts recorded `success`: must equal `tasks`.
    pub successes: u64,
    /// Attempts that did not succeed (lost with an agent or a lease, or cut short).
    pub other_attempts: u64,
    /// Runs beyond the first, from the tasks' own log.
    pub extra_runs: u64,
    /// Indices that never ran (must be none).
    pub never_ran: Vec<u64>,
    /// Agents that exited during the run, with their exit codes.
    pub agents_exited: Vec<Option<i32>>,
}

impl ChaosReport {
    /// Every fault came mid-run, every task ended exactly once, every index ran, and a
    /// rerun only where an attempt was lost; `Err` says what broke.
    pub fn check(&self) -> Result<(), String> {
        if let Some(f) = self.faults.iter().find(|f| f.done_at_start >= self.tasks) {
            return Err(format!(
                "`{}` came after the last task: no fault at all",
                f.fault
            ));
        }
        if self.successes != self.tasks {
            return Err(format!(
                "{} successes recorded for {} tasks",
                self.successes, self.tasks
            ));
        }
        if !self.never_ran.is_empty() {
            return Err(format!(
                "{} tasks never ran, e.g. {:?}",
                self.never_ran.len(),
                &self.never_ran[..self.never_ran.len().min(10)]
            ));
        }
        if self.extra_runs > self.other_attempts {
            return Err(format!(
                "{} reruns but only {} attempts lost: a task ran twice without cause",
                self.extra_runs, self.other_attempts
            ));
        }
        Ok(())
    }
}

/// Runs `plan` with its manager's data in `dir`; panics only on a harness failure (a
/// process that will not start), never on what it measures.
pub fn run(dir: &Path, plan: &ChaosPlan) -> ChaosReport {
    let log = dir.join("runs.log");
    let data = dir.join("manager");
    std::fs::create_dir_all(&data).unwrap();
    let mut m = Manager::start(&data, plan.lease_timeout_secs);
    let port = m.port;
    let proxy = FaultProxy::start(([127, 0, 0, 1], port).into()).expect("starting the proxy");
    let mut agents: Vec<Agent> = Vec::new();
    let proxied = |m: &Manager, n: usize| {
        Agent::start(
            &proxy.url(),
            "local",
            &m.agent_token("local"),
            plan.slots_per_proxied_agent,
            &dir.join(format!("agent-proxied-{n}")),
            &[],
        )
    };
    for n in 0..plan.proxied_agents as usize {
        agents.push(proxied(&m, n));
    }
    for _ in 0..plan.direct_agents {
        agents.push(m.agent("local", plan.slots_per_direct_agent, &[]));
    }
    let sleep = match plan.task_sleep_ms {
        0 => String::new(),
        ms => format!("; sleep {}", f64::from(ms) / 1000.0),
    };
    let command = format!("sh -c 'echo $HETPILOT_INDEX >> {}{sleep}'", log.display());
    let app = m.submit(array_app("chaos", &command, plan.tasks));
    let started = Instant::now();
    let deadline = started + plan.deadline;
    let left = || deadline.saturating_duration_since(Instant::now());
    let at = |share: f64| (share * plan.tasks as f64) as u64;
    let mut faults = Vec::new();

    // 1. The manager and an agent SIGKILLed together.
    let done_at_start = wait_done(&m, app, at(plan.fault_at[0]), left());
    let t0 = Instant::now();
    let victim = agents.remove(0);
    signal(&m.child, libc::SIGKILL);
    signal(&victim.child, libc::SIGKILL);
    m.kill();
    drop(victim);
    m = Manager::start_on(&data, port, plan.lease_timeout_secs, &[]);
    agents.push(proxied(&m, plan.proxied_agents as usize));
    faults.push(record(
        &m,
        app,
        "manager and agent SIGKILLed",
        done_at_start,
        (started, t0),
        plan.tasks,
        left(),
    ));

    // 2. A partition longer than a lease. The manager takes the cut-off agents for lost;
    // they stop once they hear so, and fresh ones start, as a provisioner would start pilots.
    let done_at_start = wait_done(&m, app, at(plan.fault_at[1]), left());
    let t0 = Instant::now();
    proxy.partition();
    hold_for(plan.partition_secs);
    proxy.heal();
    for n in 0..plan.proxied_agents as usize {
        agents.push(proxied(&m, plan.proxied_agents as usize + 1 + n));
    }
    faults.push(record(
        &m,
        app,
        "agents partitioned from the manager",
        done_at_start,
        (started, t0),
        plan.tasks,
        left(),
    ));

    // 3. A slow disk under the manager.
    let done_at_start = wait_done(&m, app, at(plan.fault_at[2]), left());
    let t0 = Instant::now();
    let mut slow_disk_writes = None;
    let slow_disk_skipped = match SlowDisk::apply(m.child.id(), &data, plan.slow_disk_write_iops) {
        Ok(slow) => {
            hold_for(plan.slow_disk_secs);
            slow_disk_writes = slow.writes();
            drop(slow);
            faults.push(record(
                &m,
                app,
                "manager's disk slowed",
                done_at_start,
                (started, t0),
                plan.tasks,
                left(),
            ));
            None
        }
        Err(why) => Some(why),
    };

    m.wait_finished(app, left());
    let wall_s = started.elapsed().as_secs_f64();
    let count = |sql: &str| -> u64 {
        m.db()
            .query_row(sql, [app as i64], |r| r.get::<_, i64>(0))
            .unwrap() as u64
    };
    let successes =
        count("SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND outcome = 'success'");
    let other_attempts = count(
        "SELECT COUNT(*) FROM attempts WHERE app_id = ?1 AND (outcome IS NULL OR outcome != 'success')",
    );
    let mut runs: HashMap<u64, u64> = HashMap::new();
    for line in std::fs::read_to_string(&log).unwrap_or_default().lines() {
        if let Ok(i) = line.trim().parse::<u64>() {
            *runs.entry(i).or_default() += 1;
        }
    }
    let extra_runs = runs.values().map(|n| n - 1).sum();
    let never_ran = (0..plan.tasks).filter(|i| !runs.contains_key(i)).collect();
    let agents_exited = agents
        .iter_mut()
        .filter_map(|a| a.child.try_wait().ok().flatten())
        .map(|s| s.code())
        .collect();
    ChaosReport {
        tasks: plan.tasks,
        wall_s,
        faults,
        slow_disk_skipped,
        slow_disk_writes,
        successes,
        other_attempts,
        extra_runs,
        never_ran,
        agents_exited,
    }
}

/// Lets a fault last `secs`: its length is what is being tested, not a wait for a state.
fn hold_for(secs: f64) {
    std::thread::sleep(Duration::from_secs_f64(secs));
}

/// Tasks of `app` done, as the manager says (`None` while it does not answer).
fn done(m: &Manager, app: u64) -> Option<u64> {
    let (status, body) = m.http().get(&format!("/v1/apps/{app}"), &m.admin);
    (status == 200)
        .then(|| body["counts"]["done"].as_u64())
        .flatten()
}

/// Waits until at least `n` tasks are done; returns how many were.
fn wait_done(m: &Manager, app: u64, n: u64, within: Duration) -> u64 {
    poll_until(within, || done(m, app).filter(|&d| d >= n))
        .unwrap_or_else(|| panic!("fewer than {n} tasks done within the run's bound"))
}

/// The record of a fault that began at `t0` (the run at `run_started`) and has just
/// ended, in a run of `tasks`.
fn record(
    m: &Manager,
    app: u64,
    fault: &'static str,
    done_at_start: u64,
    (run_started, t0): (Instant, Instant),
    tasks: u64,
    within: Duration,
) -> FaultRecord {
    let lasted_s = t0.elapsed().as_secs_f64();
    let ended = Instant::now();
    let done_at_end = poll_until(within, || done(m, app)).unwrap_or(done_at_start);
    let recovered_s = poll_until(within.min(Duration::from_secs(120)), || {
        done(m, app).filter(|&d| d > done_at_end || d >= tasks)
    })
    .map(|_| ended.elapsed().as_secs_f64());
    FaultRecord {
        fault,
        done_at_start,
        started_s: t0.duration_since(run_started).as_secs_f64(),
        lasted_s,
        done_during: done_at_end.saturating_sub(done_at_start),
        recovered_s,
    }
}
