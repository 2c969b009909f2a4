//! The `two-level` experiment suite (Section 6): which policy combinations run on which
//! scenarios, and the aggregation of seeded runs into the numbers behind Figs. 3-7 and
//! the Section 6.5 discussion. Running the cases is the caller's job (the CLI runs them
//! in parallel); everything here is pure.

use hetpilot_core::sched::SchedulerSettings;
use hetpilot_core::sched::{CoRunnerAffinity, PlatformAffinity};
use hetpilot_core::sched::{FirstLevel, SecondLevel};

use super::outcome::RunOutcome;

/// The paper's four first-level policies plus ours, by name, in the reports' order.
pub(crate) const FIRST_LEVELS: [&str; 5] = [
    FirstLevel::Fairness.as_str(),
    FirstLevel::Paf.as_str(),
    FirstLevel::Aaf.as_str(),
    FirstLevel::PaRoundRobin.as_str(),
    FirstLevel::WaterFill.as_str(),
];
/// The paper's four second-level policies, by name, in the reports' order.
pub(crate) const SECOND_LEVELS: [&str; 4] = [
    SecondLevel::AllCore.as_str(),
    SecondLevel::Random.as_str(),
    SecondLevel::Maf.as_str(),
    SecondLevel::CaRoundRobin.as_str(),
];
/// Mean inter-arrival times (s) of the dynamic-submission runs (the paper does not give
/// its four rates; these span a fraction of to about the default makespan).
pub(crate) const ARRIVAL_MEANS_S: [f64; 4] = [900.0, 1800.0, 3600.0, 7200.0];

/// What a case contributes to (one case can feed several tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Study {
    /// Figs. 3-7: every first × second level with a platform-affinity metric.
    Policies,
    /// Section 6.2: MAF with the raw-difference co-runner metric.
    RawDifference,
    /// Section 6.5: MAF pairwise / compute-once, D_unit = 200, P_unit = 20.
    Variants,
    /// Section 6.5: Poisson submissions.
    Dynamic,
}

/// One policy combination on one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Index into the suite's scenario list.
    pub scenario: usize,
    /// The policies and their knobs.
    pub settings: SchedulerSettings,
    /// Poisson mean inter-arrival override (dynamic submission), seconds.
    pub arrival_mean_s: Option<f64>,
    /// Which tables the case feeds.
    pub study: Study,
}

/// The mean over seeded runs of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    pub(crate) case: Case,
    pub(crate) runs: usize,
    /// Mean fairness 1 − σ/μ of the normalized throughputs (Section 3).
    pub fairness: f64,
    /// Standard deviation of the fairness over the runs.
    pub fairness_sd: f64,
    /// Mean fairness with present-application fair shares (`present_share`).
    pub fairness_present_share: f64,
    /// Mean makespan, seconds.
    pub makespan_s: f64,
    /// Sample standard deviation of the makespan over the runs (0 for one run).
    pub makespan_sd: f64,
    /// Makespan over the same scenario's (and arrivals') Fairness + AllCore makespan.
    pub efficiency: f64,
    /// Mean normalized throughput per application (scenario order; NaN if it never ran).
    pub normalized: Vec<f64>,
}

fn settings(first: FirstLevel, second: SecondLevel, metric: PlatformAffinity) -> SchedulerSettings {
    SchedulerSettings {
        first_level: first,
        second_level: second,
        platform_affinity: metric,
        ..Default::default()
    }
}

/// All cases for `scenarios` (their Table 8 kinds); `default_scenario` gets the
/// D_unit/P_unit variants, `dynamic_scenarios` the Poisson runs.
pub fn cases(
    scenario_count: usize,
    default_scenario: Option<usize>,
    dynamic_scenarios: &[usize],
) -> Vec<Case> {
    let mut out = Vec::new();
    for s in 0..scenario_count {
        let mut push = |settings: SchedulerSettings, study| {
            out.push(Case {
                scenario: s,
                settings,
                arrival_mean_s: None,
                study,
            })
        };
        for &second in SecondLevel::ALL {
            push(
                settings(FirstLevel::Fairness, second, PlatformAffinity::Reciprocal),
                Study::Policies,
            );
            for &metric in PlatformAffinity::ALL {
                for first in [FirstLevel::Paf, FirstLevel::Aaf, FirstLevel::PaRoundRobin] {
                    push(settings(first, second, metric), Study::Policies);
                }
            }
            push(
                settings(FirstLevel::WaterFill, second, PlatformAffinity::Reciprocal),
                Study::Policies,
            );
        }
        for &first in FirstLevel::ALL {
            let mut s = settings(first, SecondLevel::Maf, PlatformAffinity::Reciprocal);
            s.co_runner_affinity = CoRunnerAffinity::RawDifference;
            push(s, Study::RawDifference);
        }
        for first in [FirstLevel::PaRoundRobin, FirstLevel::WaterFill] {
            let mut pairwise = settings(first, SecondLevel::Maf, PlatformAffinity::Reciprocal);
            pairwise.pairwise = true;
            push(pairwise, Study::Variants);
            let mut once = settings(first, SecondLevel::Maf, PlatformAffinity::Reciprocal);
            once.recompute_co_runner_affinity = false;
            push(once, Study::Variants);
        }
        if Some(s) == default_scenario {
            for first in [FirstLevel::PaRoundRobin, FirstLevel::WaterFill] {
                let mut d = settings(first, SecondLevel::Maf, PlatformAffinity::Reciprocal);
                d.d_unit = 200;
                push(d, Study::Variants);
            }
            let mut p = settings(
                FirstLevel::PaRoundRobin,
                SecondLevel::CaRoundRobin,
                PlatformAffinity::Reciprocal,
            );
            p.p_unit = 20;
            push(p, Study::Variants);
        }
    }
    for &s in dynamic_scenarios {
        for mean in ARRIVAL_MEANS_S {
            let mut push = |settings: SchedulerSettings| {
                out.push(Case {
                    scenario: s,
                    settings,
                    arrival_mean_s: Some(mean),
                    study: Study::Dynamic,
                })
            };
            push(settings(
                FirstLevel::Fairness,
                SecondLevel::AllCore,
                PlatformAffinity::Reciprocal,
            ));
            for &first in FirstLevel::ALL {
                push(settings(
                    first,
                    SecondLevel::Maf,
                    PlatformAffinity::Reciprocal,
                ));
            }
        }
    }
    out
}

/// Average `runs` of each case and compute efficiency against the matching
/// Fairness + AllCore case. `outcomes[c]` are the runs of `cases[c]`.
pub fn aggregate(cases: &[Case], outcomes: &[Vec<RunOutcome>]) -> Vec<CaseResult> {
    let mut results: Vec<CaseResult> = cases
        .iter()
        .zip(outcomes)
        .map(|(case, runs)| {
            let k = runs.len().max(1) as f64;
            let fairness = runs.iter().map(|r| r.fairness).sum::<f64>() / k;
            let var = runs
                .iter()
                .map(|r| (r.fairness - fairness).powi(2))
                .sum::<f64>()
                / k;
            let apps = runs.first().map_or(0, |r| r.apps.len());
            let normalized = (0..apps)
                .map(|a| {
                    let vals: Vec<f64> = runs
                        .iter()
                        .filter_map(|r| r.apps[a].normalized_throughput)
                        .collect();
                    if vals.is_empty() {
                        f64::NAN
                    } else {
                        vals.iter().sum::<f64>() / vals.len() as f64
                    }
                })
                .collect();
            CaseResult {
                case: case.clone(),
                runs: runs.len(),
                fairness,
                fairness_sd: var.sqrt(),
                fairness_present_share: runs.iter().map(|r| r.fairness_present_share).sum::<f64>()
                    / k,
                makespan_s: runs.iter().map(|r| r.makespan).sum::<f64>() / k,
                makespan_sd: sample_sd(runs.iter().map(|r| r.makespan)),
                efficiency: f64::NAN,
                normalized,
            }
        })
        .collect();
    let baseline: Vec<Option<f64>> = results
        .iter()
        .map(|r| {
            results
                .iter()
                .find(|b| {
                    b.case.scenario == r.case.scenario
                        && b.case.arrival_mean_s == r.case.arrival_mean_s
                        && b.case.settings.first_level == FirstLevel::Fairness
                        && b.case.settings.second_level == SecondLevel::AllCore
                })
                .map(|b| b.makespan_s)
        })
        .collect();
    for (r, b) in results.iter_mut().zip(baseline) {
        r.efficiency = match b {
            Some(b) if b > 0.0 => r.makespan_s / b,
            _ => f64::NAN,
        };
    }
    results
}

/// Sample standard deviation (n − 1 in the denominator; 0 below two values).
fn sample_sd(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let n = values.clone().count();
    if n < 2 {
        return 0.0;
    }
    let mean = values.clone().sum::<f64>() / n as f64;
    (values.map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_order_names_every_policy_once() {
        let firsts: Vec<&str> = FirstLevel::ALL.iter().map(|f| f.as_str()).collect();
        let seconds: Vec<&str> = SecondLevel::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(FIRST_LEVELS.to_vec(), firsts);
        assert_eq!(SECOND_LEVELS.to_vec(), seconds);
    }

    #[test]
    fn every_case_has_a_baseline_and_valid_settings() {
        let cases = cases(3, Some(0), &[0]);
        for c in &cases {
            c.settings.validate().unwrap();
            assert!(cases.iter().any(|b| b.scenario == c.scenario
                && b.arrival_mean_s == c.arrival_mean_s
                && b.settings.first_level == FirstLevel::Fairness
                && b.settings.second_level == SecondLevel::AllCore));
        }
        // 53 static cases per scenario, 3 more on the default one, 24 dynamic.
        assert_eq!(cases.len(), 3 * 53 + 3 + 24);
    }
}
