//! `[scheduler]`: which two-level policies the live manager runs, and how often.

use crate::alloc::{allocator_by_name, Allocator, MAX_TLPA_DEPTH};
use crate::ptg::live::WorkflowPolicy;
use crate::sched::{SchedError, Scheduler, SchedulerSettings};
use serde::{Deserialize, Serialize};

/// `[scheduler]` in the configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SchedulerConfig {
    /// First-level policy (`fairness`, `paf`, `aaf`, `pa-rr`, `water-fill`), or
    /// `round-robin` to serve applications in turn without scheduling rounds.
    pub policy: String,
    /// Second-level policy (`all-core`, `random`, `maf`, `ca-rr`).
    pub(crate) second_level: String,
    /// Platform-affinity metric (`throughput`, `epa`, `rpa`).
    pub(crate) metric: String,
    /// Longest time between two rounds; rounds also run on every change that matters.
    pub interval_ms: u64,
    /// Tasks each application runs on each platform before only the plan decides.
    pub(crate) explore_samples: u32,
    /// Seed of the rounds' random generator.
    pub(crate) seed: u64,
    /// TLPA look-ahead depth d for multi-core applications (waiting tasks simulated).
    pub(crate) tlpa_depth: usize,
    /// Which processor allocator places multi-core and parallel runs on platforms, as
    /// `simulate alloc --allocator` names them: `tlpa` (look-ahead `tlpa_depth`), `bf`
    /// (best fit) or `ff` (fastest first).
    pub allocator: String,
    /// How competing workflows share the cores the first level gives them
    /// (`cafm-k-shelves`, `cra-work-weight` or `round-robin`, see `ptg::live`).
    pub workflows: String,
    /// Whether a wide task (several slots, or several units of a resource, at once)
    /// gets a reservation, with narrower tasks backfilling around it (EASY); off, it
    /// waits until enough slots happen to be free when its agent pulls.
    pub reservations: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            policy: "pa-rr".into(),
            second_level: "maf".into(),
            metric: "rpa".into(),
            interval_ms: 1000,
            explore_samples: 2,
            seed: 1,
            tlpa_depth: 8,
            allocator: "tlpa".into(),
            workflows: WorkflowPolicy::default().name().into(),
            reservations: true,
        }
    }
}

impl SchedulerConfig {
    /// The core's settings, or None for `round-robin`; errors name the field and the
    /// accepted values.
    pub fn settings(&self) -> Result<Option<SchedulerSettings>, SchedError> {
        self.workflow_policy()?;
        self.allocator()?;
        if self.policy == "round-robin" {
            return Ok(None);
        }
        let settings = SchedulerSettings {
            first_level: self.policy.clone(),
            second_level: self.second_level.clone(),
            platform_affinity: self.metric.parse()?,
            ..SchedulerSettings::default()
        };
        Scheduler::new(settings.clone())?;
        if self.interval_ms < 10 {
            return Err(SchedError::InvalidSetting {
                field: "interval_ms",
                problem: format!("{} ms is too short (at least 10)", self.interval_ms),
            });
        }
        Ok(Some(settings))
    }

    /// The processor allocator `allocator` names; the error lists the accepted names.
    pub(crate) fn allocator(&self) -> Result<Box<dyn Allocator>, SchedError> {
        if self.tlpa_depth > MAX_TLPA_DEPTH {
            return Err(SchedError::InvalidSetting {
                field: "tlpa_depth",
                problem: format!("{} is more than {MAX_TLPA_DEPTH}", self.tlpa_depth),
            });
        }
        allocator_by_name(&self.allocator, self.tlpa_depth).map_err(|e| {
            SchedError::InvalidSetting {
                field: "allocator",
                problem: e.to_string(),
            }
        })
    }

    /// The workflow policy `workflows` names; the error lists the accepted names.
    pub fn workflow_policy(&self) -> Result<WorkflowPolicy, SchedError> {
        WorkflowPolicy::parse(&self.workflows).map_err(|problem| SchedError::InvalidSetting {
            field: "workflows",
            problem,
        })
    }
}
