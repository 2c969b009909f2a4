//! Scheduler settings: which policy runs at each level, which affinity metrics they use,
//! and the knobs of Section 5 (k, D_unit, P_unit, pairwise / compute-once MAF).

use super::affinity::{CoRunnerAffinity, PlatformAffinity};
use super::error::SchedError;
use super::first_level::FirstLevel;
use super::second_level::SecondLevel;

/// Everything that selects and tunes the two policies of a [`super::Scheduler`].
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerSettings {
    /// First-level policy (`fairness`, `paf`, `aaf`, `pa-rr`, `water-fill`).
    pub first_level: FirstLevel,
    /// Second-level policy (`all-core`, `random`, `maf`, `ca-rr`).
    pub second_level: SecondLevel,
    /// Platform-affinity metric of the first level (Section 4.1).
    pub platform_affinity: PlatformAffinity,
    /// Co-runner-affinity metric of MAF (Section 4.2).
    pub co_runner_affinity: CoRunnerAffinity,
    /// PAF/AAF threshold k in percent (Section 5.1.1): 1 ≤ k ≤ 50.
    pub top_k_percent: u32,
    /// PA-based RR (and water-fill) allocation unit D_unit in cores (Algorithm 2), ≥ 1.
    pub d_unit: u32,
    /// CA-based RR placement unit P_unit in nodes (Section 5.2.2), ≥ 1.
    pub p_unit: u32,
    /// Only consider combinations of at most two applications (Section 5.3.2).
    pub pairwise: bool,
    /// MAF recomputes co-runner affinities every iteration (Algorithm 3 line 8); `false`
    /// computes them once per platform (Section 5.3.2).
    pub recompute_co_runner_affinity: bool,
}

impl Default for SchedulerSettings {
    fn default() -> Self {
        Self {
            first_level: FirstLevel::PaRoundRobin,
            second_level: SecondLevel::Maf,
            platform_affinity: PlatformAffinity::Reciprocal,
            co_runner_affinity: CoRunnerAffinity::NormalizedDifference,
            top_k_percent: 50,
            d_unit: 1,
            p_unit: 1,
            pairwise: false,
            recompute_co_runner_affinity: true,
        }
    }
}

impl SchedulerSettings {
    /// Reject out-of-range knobs (the policies' names were checked where they were read).
    pub fn validate(&self) -> Result<(), SchedError> {
        if !(1..=50).contains(&self.top_k_percent) {
            return Err(SchedError::InvalidSetting {
                field: "top_k_percent",
                problem: format!(
                    "k must be an integer between 1 and 50 (Section 5.1.1), got {}",
                    self.top_k_percent
                ),
            });
        }
        if self.d_unit < 1 {
            return Err(SchedError::InvalidSetting {
                field: "d_unit",
                problem: "D_unit must be at least 1 core".into(),
            });
        }
        if self.p_unit < 1 {
            return Err(SchedError::InvalidSetting {
                field: "p_unit",
                problem: "P_unit must be at least 1 node".into(),
            });
        }
        Ok(())
    }

    /// A short label such as `pa-rr(rpa, D=1) + maf(normalized)` for reports.
    pub fn label(&self) -> String {
        let first = match self.first_level {
            FirstLevel::Fairness => "fairness".to_string(),
            FirstLevel::Paf | FirstLevel::Aaf => format!(
                "{}({}, k={})",
                self.first_level, self.platform_affinity, self.top_k_percent
            ),
            FirstLevel::PaRoundRobin | FirstLevel::WaterFill if self.d_unit != 1 => format!(
                "{}({}, D={})",
                self.first_level, self.platform_affinity, self.d_unit
            ),
            other => format!("{other}({})", self.platform_affinity),
        };
        let second = match self.second_level {
            SecondLevel::Maf => {
                let mut opts = vec![self.co_runner_affinity.to_string()];
                if self.pairwise {
                    opts.push("pairwise".into());
                }
                if !self.recompute_co_runner_affinity {
                    opts.push("once".into());
                }
                format!("maf({})", opts.join(", "))
            }
            SecondLevel::CaRoundRobin if self.p_unit != 1 || self.pairwise => {
                format!(
                    "ca-rr(P={}{})",
                    self.p_unit,
                    if self.pairwise { ", pairwise" } else { "" }
                )
            }
            other => other.to_string(),
        };
        format!("{first} + {second}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_knobs_are_named() {
        let mut s = SchedulerSettings {
            top_k_percent: 51,
            ..Default::default()
        };
        assert!(matches!(
            s.validate(),
            Err(SchedError::InvalidSetting {
                field: "top_k_percent",
                ..
            })
        ));
        s.top_k_percent = 50;
        s.d_unit = 0;
        assert!(matches!(
            s.validate(),
            Err(SchedError::InvalidSetting {
                field: "d_unit",
                ..
            })
        ));
        s.d_unit = 1;
        s.p_unit = 0;
        assert!(matches!(
            s.validate(),
            Err(SchedError::InvalidSetting {
                field: "p_unit",
                ..
            })
        ));
    }
}
