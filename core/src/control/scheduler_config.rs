//! `[scheduler]`: which two-level policies the live manager runs, and how often.

use crate::alloc::{Allocator, AllocatorKind};
use crate::ptg::live::WorkflowPolicy;
use crate::sched::{FirstLevel, PlatformAffinity, SchedError, SchedulerSettings, SecondLevel};
use hetpilot_protocol::named::UnknownName;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What the live manager schedules with: the two-level scheduler, named by its
/// first-level policy, or the applications served in turn (`round-robin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum LivePolicy {
    /// Applications served in turn, without scheduling rounds.
    RoundRobin,
    /// The two-level scheduler with this first-level policy.
    TwoLevel(FirstLevel),
}

impl LivePolicy {
    /// The name of [`LivePolicy::RoundRobin`].
    const ROUND_ROBIN: &'static str = "round-robin";
}

impl fmt::Display for LivePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LivePolicy::RoundRobin => f.write_str(Self::ROUND_ROBIN),
            LivePolicy::TwoLevel(first) => first.fmt(f),
        }
    }
}

impl FromStr for LivePolicy {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == Self::ROUND_ROBIN {
            return Ok(LivePolicy::RoundRobin);
        }
        s.parse()
            .map(LivePolicy::TwoLevel)
            .map_err(|e: UnknownName| {
                let mut valid = e.valid;
                valid.push(Self::ROUND_ROBIN);
                UnknownName {
                    what: "scheduler policy",
                    valid,
                    ..e
                }
            })
    }
}

impl TryFrom<String> for LivePolicy {
    type Error = UnknownName;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<LivePolicy> for String {
    fn from(p: LivePolicy) -> String {
        p.to_string()
    }
}

/// `[scheduler]` in the configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SchedulerConfig {
    /// First-level policy (`fairness`, `paf`, `aaf`, `pa-rr`, `water-fill`), or
    /// `round-robin` to serve applications in turn without scheduling rounds.
    pub policy: LivePolicy,
    /// Second-level policy (`all-core`, `random`, `maf`, `ca-rr`).
    pub(crate) second_level: SecondLevel,
    /// Platform-affinity metric (`throughput`, `epa`, `rpa`).
    pub(crate) metric: PlatformAffinity,
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
    pub allocator: AllocatorKind,
    /// How competing workflows share the cores the first level gives them
    /// (`cafm-k-shelves`, `cra-work-weight` or `round-robin`, see `ptg::live`).
    pub workflows: WorkflowPolicy,
    /// Whether a wide task (several slots, or several units of a resource, at once)
    /// gets a reservation, with narrower tasks backfilling around it (EASY); off, it
    /// waits until enough slots happen to be free when its agent pulls.
    pub reservations: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            policy: LivePolicy::TwoLevel(FirstLevel::PaRoundRobin),
            second_level: SecondLevel::Maf,
            metric: PlatformAffinity::Reciprocal,
            interval_ms: 1000,
            explore_samples: 2,
            seed: 1,
            tlpa_depth: 8,
            allocator: AllocatorKind::Tlpa,
            workflows: WorkflowPolicy::default(),
            reservations: true,
        }
    }
}

impl SchedulerConfig {
    /// The core's settings, or None for `round-robin`; errors name the field. (The
    /// policies' names were checked when the configuration was read.)
    pub fn settings(&self) -> Result<Option<SchedulerSettings>, SchedError> {
        self.allocator()?;
        let LivePolicy::TwoLevel(first_level) = self.policy else {
            return Ok(None);
        };
        let settings = SchedulerSettings {
            first_level,
            second_level: self.second_level,
            platform_affinity: self.metric,
            ..SchedulerSettings::default()
        };
        settings.validate()?;
        if self.interval_ms < 10 {
            return Err(SchedError::InvalidSetting {
                field: "interval_ms",
                problem: format!("{} ms is too short (at least 10)", self.interval_ms),
            });
        }
        Ok(Some(settings))
    }

    /// The processor allocator `allocator` names, with the look-ahead `tlpa_depth`.
    pub(crate) fn allocator(&self) -> Result<Box<dyn Allocator>, SchedError> {
        self.allocator
            .build(self.tlpa_depth)
            .map_err(|e| SchedError::InvalidSetting {
                field: "tlpa_depth",
                problem: e.to_string(),
            })
    }
}
