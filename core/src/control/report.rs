//! An agent's report, decided in one place: each result is the agent's current lease, a
//! late result of one of its earlier leases, or a duplicate of one already recorded;
//! anything else (another agent's attempt, one never handed out) refuses the whole report,
//! changing nothing. The queues know the current leases; earlier attempts are in the
//! store, so the shell looks up the ones the queues cannot place ([`Control::history_wanted`])
//! and hands them in as [`StoredAttempt`]s. The decision, with those facts, is journaled
//! and a replay checks it.
//!
//! Each result's measurements are then clamped to its lease ([`clamp_to_lease`]), so a
//! report cannot charge a user, or teach a profile, more than the lease allowed.

use super::{measured, Control, Input, Output};
use crate::queue::{ReportCheck, ReportError};
use hetpilot_protocol::files::StagingStats;
use hetpilot_protocol::protocol::{Measurements, Outcome, TaskResult};
use hetpilot_protocol::{AgentId, TaskRef};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Clock slack allowed between a lease and the run the agent measured (ms): agents and
/// the manager keep separate clocks, and a lease is granted before it travels.
pub const LEASE_SLACK_MS: f64 = 5_000.0;

/// What the store holds of one task attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAttempt {
    /// The agent it was leased to.
    pub agent: AgentId,
    /// Whether its result was recorded already.
    pub recorded: bool,
    /// When it was leased (manager unix ms).
    pub leased_ms: u64,
}

/// The store's answers for the results the queues could not place, by the result's index
/// in its report: `None` where the store has no such attempt.
pub type ReportHistory = BTreeMap<usize, Option<StoredAttempt>>;

/// How one result of a report is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultClass {
    /// The agent's current lease of the task.
    Current,
    /// An earlier lease of the same agent, ended without its result (the lease expired,
    /// or the task was cancelled): recorded as a run.
    Late,
    /// Recorded before (the agent sent the report again): counted, not recorded twice.
    Duplicate,
}

/// What [`Control::record_report`] did.
#[derive(Debug)]
#[must_use = "a report whose history is missing is to be looked up and recorded again"]
pub enum ReportAnswer {
    /// The report is recorded (what changed is among the effects): each result's class.
    Recorded {
        /// Each result's class, in the report's order.
        classes: Vec<ResultClass>,
        /// Tasks whose measurements claimed more than their lease allowed (clamped).
        clamped: Vec<TaskRef>,
    },
    /// A lease ended since the history was looked up: look these results up too (by
    /// index) and call again with the `results` given back. Nothing changed.
    NeedsHistory {
        /// The results (by index) whose stored attempts are wanted.
        missing: Vec<usize>,
        /// The report's results, as they came.
        results: Vec<TaskResult>,
    },
}

impl Control {
    /// The results of a report (by index) that are not the agent's current lease, whose
    /// stored attempt must be looked up before [`Control::record_report`] can decide them.
    /// Refuses a report from an unknown agent or naming an unknown task.
    pub fn history_wanted(
        &self,
        agent: AgentId,
        results: &[TaskResult],
    ) -> Result<Vec<usize>, ReportError> {
        let mut wanted = Vec::new();
        for (i, r) in results.iter().enumerate() {
            if self.queues.check_result(agent, r)? == ReportCheck::NeedsHistory {
                wanted.push(i);
            }
        }
        Ok(wanted)
    }

    /// Decides and records an agent's report, given the store's `history` of the results
    /// that are not current leases. Each recorded result ends its attempt in the queues,
    /// and each run teaches the profile, the bandwidth estimates and its owner's usage.
    /// Results of an application forgotten since are dropped.
    pub fn record_report(
        &mut self,
        agent: AgentId,
        results: Vec<TaskResult>,
        history: &ReportHistory,
        now_ms: u64,
    ) -> Result<ReportAnswer, ReportError> {
        let mut results = results;
        let decided = match self.classify(agent, &results, history) {
            Ok(Classified::Missing(missing)) => {
                return Ok(ReportAnswer::NeedsHistory { missing, results })
            }
            Ok(Classified::All(classes)) => Ok(classes),
            Err(e) => Err(e),
        };
        // Clamped before it is journaled, so a journal holds only what was recorded (a
        // replay clamps again, which changes nothing).
        let mut clamped = Vec::new();
        if let Ok(classified) = &decided {
            let cores = self.queues.agent(agent).map_or(1, |a| a.cores);
            for (r, (_, leased_ms)) in results.iter_mut().zip(classified) {
                let age = leased_ms.map_or(0, |l| now_ms.saturating_sub(l));
                if clamp_to_lease(&mut r.measurements, r.staging.as_mut(), age, cores) {
                    clamped.push(r.task);
                }
            }
        }
        self.journal.decided(
            || Input::Report {
                agent,
                results: results.clone(),
                history: history.clone(),
                now_ms,
            },
            || match &decided {
                Ok(classes) => Output::Recorded(classes.iter().map(|(c, _)| *c).collect()),
                Err(e) => Output::Refused(e.to_string()),
            },
        );
        let classes: Vec<ResultClass> = decided?.into_iter().map(|(c, _)| c).collect();
        let duplicate: Vec<bool> = classes
            .iter()
            .map(|c| *c == ResultClass::Duplicate)
            .collect();
        self.apply_report(agent, results, &duplicate, now_ms);
        Ok(ReportAnswer::Recorded { classes, clamped })
    }

    /// Each result's class and the time its lease began (when known), or the results
    /// whose history is missing.
    fn classify(
        &self,
        agent: AgentId,
        results: &[TaskResult],
        history: &ReportHistory,
    ) -> Result<Classified, ReportError> {
        let held = self.queues.agent(agent).map(|a| &a.held);
        let mut classes = Vec::with_capacity(results.len());
        let mut missing = Vec::new();
        for (i, r) in results.iter().enumerate() {
            let check = self.queues.check_result(agent, r);
            match check {
                Ok(ReportCheck::Current) => {
                    let leased = held.and_then(|h| h.get(&r.task).copied());
                    classes.push((ResultClass::Current, leased));
                    continue;
                }
                // Not the current lease, or of an application forgotten since the history
                // was looked up (its run is then dropped when recorded): the store decides.
                Ok(ReportCheck::NeedsHistory) | Err(ReportError::UnknownTask(_)) => {}
                Err(e) => return Err(e),
            }
            match history.get(&i) {
                None => missing.push(i),
                Some(Some(stored)) if stored.agent == agent => {
                    let class = if stored.recorded {
                        ResultClass::Duplicate
                    } else {
                        ResultClass::Late
                    };
                    classes.push((class, Some(stored.leased_ms)));
                }
                Some(_) => {
                    return Err(check.err().unwrap_or(ReportError::Foreign {
                        task: r.task,
                        attempt: r.attempt,
                        agent,
                    }))
                }
            }
        }
        Ok(if missing.is_empty() {
            Classified::All(classes)
        } else {
            Classified::Missing(missing)
        })
    }

    /// Records decided results (`duplicate[i]`: result i was recorded before).
    fn apply_report(
        &mut self,
        agent: AgentId,
        results: Vec<TaskResult>,
        duplicate: &[bool],
        now_ms: u64,
    ) {
        let (results, duplicate): (Vec<TaskResult>, Vec<bool>) = results
            .into_iter()
            .zip(duplicate.iter().copied())
            .filter(|(r, _)| self.queues.app(r.task.app).is_some())
            .unzip();
        let mut runs = measured::runs(agent, &results, &duplicate);
        for (run, result) in runs
            .iter_mut()
            .zip(results.iter().zip(&duplicate).filter(|(_, d)| !**d))
        {
            run.variant = self.queues.variant_of(agent, result.0);
            // Device co-runners count only for a run whose lease granted a GPU fraction.
            run.device_co_runners = self
                .queues
                .held_fractional_gpu(agent, result.0)
                .then(|| result.0.measurements.device_co_runners.clone());
        }
        let mut changes = Vec::new();
        for (result, dup) in results.into_iter().zip(duplicate) {
            if !dup {
                changes.extend(self.queues.apply_result(agent, result));
            }
        }
        for run in runs.iter().filter(|r| r.outcome == Outcome::Success) {
            if let Some(agent) = self.policy.agents.get(&run.agent) {
                self.queues
                    .note_runtime(run.app, &agent.platform, run.wall_ms);
            }
        }
        for run in &runs {
            self.policy.profile_run(run);
            self.policy.charge(run);
        }
        self.ended(changes, now_ms);
    }
}

/// A report's classification: complete, or the results whose history is missing.
enum Classified {
    All(Vec<(ResultClass, Option<u64>)>),
    Missing(Vec<usize>),
}

/// Clamps a run's measurements to what its lease allows: wall time no longer than the
/// lease has existed (plus slack), CPU time no more than `cores` × wall time, transfers no
/// longer than the run. Returns whether anything had to be clamped.
pub fn clamp_to_lease(
    m: &mut Measurements,
    staging: Option<&mut StagingStats>,
    lease_age_ms: u64,
    cores: u32,
) -> bool {
    let max_wall = lease_age_ms as f64 + LEASE_SLACK_MS;
    let mut clamped = false;
    if m.wall_ms > max_wall {
        m.wall_ms = max_wall;
        clamped = true;
    }
    let max_cpu = f64::from(cores.max(1)) * m.wall_ms + LEASE_SLACK_MS;
    let cpu = m.user_cpu_ms + m.sys_cpu_ms;
    if cpu > max_cpu {
        let scale = max_cpu / cpu;
        m.user_cpu_ms *= scale;
        m.sys_cpu_ms *= scale;
        clamped = true;
    }
    if let Some(s) = staging {
        for t in &mut s.transfers {
            if t.ms > max_wall {
                t.ms = max_wall;
                clamped = true;
            }
            // The bandwidth is recomputed from what is left, never taken on trust.
            let seconds = t.ms / 1000.0;
            let rate = if seconds > 0.0 {
                t.bytes as f64 / seconds / f64::from(1u32 << 20)
            } else {
                0.0
            };
            if t.mib_per_s > rate * 1.01 + 1e-9 {
                t.mib_per_s = rate;
                clamped = true;
            }
        }
    }
    clamped
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
