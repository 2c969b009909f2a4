//! The two-level paper's headline claims checked scenario by scenario, each with a 95 %
//! interval and a verdict by rules fixed before the runs: the difference of two cases'
//! means (fairness, or makespan where the claim is about efficiency) relative to the
//! second case, with a Welch interval from the per-case standard deviations (it ignores the
//! positive correlation that common random numbers create, so it is conservative).

use crate::sim::two_level::suite::{Case, CaseResult, Study};
use hetpilot_core::sched::PlatformAffinity;

use super::stats::t_975;
use super::two_level::ScenarioInfo;

/// One claim: case A against case B, on fairness or on makespan.
struct Claim {
    /// What the paper says, with its figure.
    text: &'static str,
    /// (first level, second level, metric) of A and of B.
    a: (&'static str, &'static str, PlatformAffinity),
    b: (&'static str, &'static str, PlatformAffinity),
    /// Makespan instead of fairness (lower is better).
    makespan: bool,
}

const RPA: PlatformAffinity = PlatformAffinity::Reciprocal;

const CLAIMS: [Claim; 8] = [
    Claim {
        text: "Fig. 3: RPA fairer than throughput (paper +10 %)",
        a: ("pa-rr", "maf", RPA),
        b: ("pa-rr", "maf", PlatformAffinity::Throughput),
        makespan: false,
    },
    Claim {
        text: "Fig. 3: RPA fairer than EPA (paper +3 %)",
        a: ("pa-rr", "maf", RPA),
        b: ("pa-rr", "maf", PlatformAffinity::Egocentric),
        makespan: false,
    },
    Claim {
        text: "Fig. 5: PA-based RR fairer than PAF",
        a: ("pa-rr", "maf", RPA),
        b: ("paf", "maf", RPA),
        makespan: false,
    },
    Claim {
        text: "Fig. 5: PA-based RR fairer than AAF",
        a: ("pa-rr", "maf", RPA),
        b: ("aaf", "maf", RPA),
        makespan: false,
    },
    Claim {
        text: "Fig. 5: PA-based RR fairer than Fairness",
        a: ("pa-rr", "maf", RPA),
        b: ("fairness", "maf", RPA),
        makespan: false,
    },
    Claim {
        text: "§6.3: MAF fairer than Random under PA-based RR (paper +2.0 %)",
        a: ("pa-rr", "maf", RPA),
        b: ("pa-rr", "random", RPA),
        makespan: false,
    },
    Claim {
        text: "§6.3: MAF's makespan shorter than Random's under PA-based RR (paper 3.7 %)",
        a: ("pa-rr", "maf", RPA),
        b: ("pa-rr", "random", RPA),
        makespan: true,
    },
    Claim {
        text: "PA-based RR + MAF's makespan shorter than Fairness + AllCore's",
        a: ("pa-rr", "maf", RPA),
        b: ("fairness", "all-core", RPA),
        makespan: true,
    },
];

/// One claim measured on one scenario.
struct Measured {
    /// Relative difference (positive = the claim's direction).
    rel: f64,
    /// Standard error of `rel` from the run-to-run spread.
    se: f64,
    /// Ends of the 95 % interval.
    lo: f64,
    hi: f64,
    /// Runs per case (the smaller of the two).
    runs: usize,
}

impl Measured {
    /// Case A against case B (Welch interval on the difference of the means).
    fn of(claim: &Claim, a: &CaseResult, b: &CaseResult) -> Measured {
        let (ma, sa, mb, sb) = if claim.makespan {
            (a.makespan_s, a.makespan_sd, b.makespan_s, b.makespan_sd)
        } else {
            (a.fairness, sample(a), b.fairness, sample(b))
        };
        // Makespan: the gain is (B − A) / B; fairness: (A − B) / B.
        let diff = if claim.makespan { mb - ma } else { ma - mb };
        let runs = a.runs.min(b.runs);
        let se = (sa * sa / a.runs.max(1) as f64 + sb * sb / b.runs.max(1) as f64).sqrt();
        let half = if runs >= 2 { t_975(runs - 1) * se } else { 0.0 };
        Measured {
            rel: diff / mb,
            se: se / mb,
            lo: (diff - half) / mb,
            hi: (diff + half) / mb,
            runs,
        }
    }

    /// The verdict by the rule fixed before the runs.
    fn verdict(&self) -> &'static str {
        if self.runs < 2 {
            "one run: no interval"
        } else if self.lo > 0.0 {
            "reproduced"
        } else if self.hi < 0.0 {
            "opposite"
        } else {
            "not resolved"
        }
    }

    /// `+1.23 % [+1.00, +1.46]`.
    fn cell(&self) -> String {
        format!(
            "{:+.2} % [{:+.2}, {:+.2}]",
            self.rel * 100.0,
            self.lo * 100.0,
            self.hi * 100.0
        )
    }
}

/// The Markdown section: for every scenario of kind `Default` (or every scenario when
/// `all` is set), one row per claim; with more than one scenario, a summary per claim
/// over them.
pub fn claims_markdown(scenarios: &[ScenarioInfo], results: &[CaseResult], all: bool) -> String {
    let mut md = String::from(
        "## Headline claims with 95 % intervals\n\n\
         Relative difference of case A over case B (fairness: A/B − 1, positive = A fairer; \
         makespan: 1 − A/B, positive = A shorter), mean over the runs with a Welch 95 % \
         interval. Verdict (rule fixed before the runs): *reproduced* when the interval lies \
         above zero, *opposite* when it lies below, *not resolved* when it contains zero.\n\n\
         | scenario | claim | ours | runs | verdict |\n|---|---|---|---|---|\n",
    );
    let mut per_claim: Vec<Vec<Measured>> = CLAIMS.iter().map(|_| Vec::new()).collect();
    for (s, info) in scenarios.iter().enumerate() {
        if !all && info.kind != "Default" {
            continue;
        }
        for (c, claim) in CLAIMS.iter().enumerate() {
            let (Some(a), Some(b)) = (find(results, s, claim.a), find(results, s, claim.b)) else {
                continue;
            };
            let m = Measured::of(claim, a, b);
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                info.name,
                claim.text,
                m.cell(),
                m.runs,
                m.verdict()
            ));
            per_claim[c].push(m);
        }
    }
    if per_claim.iter().any(|m| m.len() > 1) {
        md.push_str(&summary_markdown(&per_claim));
    }
    md
}

/// Per claim over the scenarios: how many scenarios give each verdict, and the mean
/// relative difference with a 95 % interval. The scenarios are fixed (the paper's Table 8),
/// not sampled, so the interval covers run-to-run noise only: standard error
/// sqrt(Σ se_s²) / S, normal quantile.
fn summary_markdown(per_claim: &[Vec<Measured>]) -> String {
    let mut md = String::from(
        "\n### Per claim over the scenarios\n\n\
         Mean of the per-scenario relative differences with a 95 % interval (the scenarios \
         are the paper's fixed set, so the interval covers run-to-run noise only), and the \
         number of scenarios with each verdict.\n\n\
         | claim | mean over scenarios | scenarios | reproduced | opposite | not resolved |\n\
         |---|---|---|---|---|---|\n",
    );
    for (claim, rows) in CLAIMS.iter().zip(per_claim) {
        if rows.is_empty() {
            continue;
        }
        let k = rows.len() as f64;
        let mean = rows.iter().map(|m| m.rel).sum::<f64>() / k;
        let se = rows.iter().map(|m| m.se * m.se).sum::<f64>().sqrt() / k;
        let half = 1.959_964 * se;
        let count = |v: &str| rows.iter().filter(|m| m.verdict() == v).count();
        md.push_str(&format!(
            "| {} | {:+.2} % [{:+.2}, {:+.2}] | {} | {} | {} | {} |\n",
            claim.text,
            mean * 100.0,
            (mean - half) * 100.0,
            (mean + half) * 100.0,
            rows.len(),
            count("reproduced"),
            count("opposite"),
            count("not resolved")
        ));
    }
    md
}

/// Dynamic submission with two normalizations (does PAF stay fair when applications arrive over time?): for each
/// first level with MAF and each mean gap (and all at once), the paper's fairness (fair
/// share over all applications) beside the fairness with fair shares over the
/// applications present during each one's lifetime. Empty without dynamic cases.
pub fn dynamic_markdown(scenarios: &[ScenarioInfo], results: &[CaseResult]) -> String {
    let dynamic = |r: &&CaseResult| r.case.study == Study::Dynamic;
    if !results.iter().any(|r| dynamic(&r)) {
        return String::new();
    }
    let mut md = String::from(
        "## Dynamic submission: fairness under two normalizations\n\n\
         Fairness of each first level with MAF (Fairness with AllCore), mean over the runs: \
         the paper's normalization (fair share = total cores / all applications) / the \
         present-share one (total cores / applications present during the application's \
         lifetime).\n\n| scenario | first level | all at once |",
    );
    let mut gaps: Vec<f64> = results
        .iter()
        .filter(dynamic)
        .filter_map(|r| r.case.arrival_mean_s)
        .collect();
    gaps.sort_by(f64::total_cmp);
    gaps.dedup();
    for g in &gaps {
        md.push_str(&format!(" gap {g:.0} s |"));
    }
    md.push_str(
        "
|---|---|---|",
    );
    md.push_str(&"---|".repeat(gaps.len()));
    md.push('\n');
    for (s, info) in scenarios.iter().enumerate() {
        for first in ["fairness", "paf", "aaf", "pa-rr", "water-fill"] {
            let second = if first == "fairness" {
                "all-core"
            } else {
                "maf"
            };
            let pick = |gap: Option<f64>| {
                results.iter().find(|r| {
                    r.case.scenario == s
                        && r.case.arrival_mean_s == gap
                        && r.case.settings.first_level == first
                        && r.case.settings.second_level == second
                        && r.case.settings.platform_affinity == RPA
                        && matches!(r.case.study, Study::Dynamic | Study::Policies)
                })
            };
            let cell = |r: Option<&CaseResult>| {
                r.map_or("–".to_string(), |r| {
                    format!("{:.3} / {:.3}", r.fairness, r.fairness_present_share)
                })
            };
            md.push_str(&format!(
                "| {} | {first} | {} |",
                info.name,
                cell(pick(None))
            ));
            for g in &gaps {
                md.push_str(&format!(" {} |", cell(pick(Some(*g)))));
            }
            md.push('\n');
        }
    }
    md.push('\n');
    md
}

/// True when `case` is one of the claims' A or B cases (`--claims-only` runs just these).
pub fn is_claim_case(case: &Case) -> bool {
    case.study == Study::Policies
        && case.arrival_mean_s.is_none()
        && CLAIMS
            .iter()
            .flat_map(|c| [c.a, c.b])
            .any(|(first, second, metric)| {
                case.settings.first_level == first
                    && case.settings.second_level == second
                    && (case.settings.platform_affinity == metric || first == "fairness")
            })
}

/// The static policy case of scenario `s` with the given levels and metric.
fn find<'a>(
    results: &'a [CaseResult],
    s: usize,
    (first, second, metric): (&str, &str, PlatformAffinity),
) -> Option<&'a CaseResult> {
    results.iter().find(|r| {
        r.case.scenario == s
            && r.case.study == Study::Policies
            && r.case.arrival_mean_s.is_none()
            && r.case.settings.first_level == first
            && r.case.settings.second_level == second
            && (r.case.settings.platform_affinity == metric || first == "fairness")
    })
}

/// The fairness's sample standard deviation (`fairness_sd` divides by n).
fn sample(r: &CaseResult) -> f64 {
    if r.runs < 2 {
        return 0.0;
    }
    r.fairness_sd * (r.runs as f64 / (r.runs - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(rel: f64, se: f64) -> Measured {
        Measured {
            rel,
            se,
            lo: rel - 2.0 * se,
            hi: rel + 2.0 * se,
            runs: 100,
        }
    }

    #[test]
    fn the_summary_counts_verdicts_and_pools_the_standard_errors() {
        // Claim 0 on two scenarios: +2 % (se 0.3 %) reproduced, −0.1 % (se 0.4 %) not resolved.
        let mut per_claim: Vec<Vec<Measured>> = CLAIMS.iter().map(|_| Vec::new()).collect();
        per_claim[0] = vec![measured(0.02, 0.003), measured(-0.001, 0.004)];
        let md = summary_markdown(&per_claim);
        // Mean +0.95 %, se = sqrt(0.003² + 0.004²) / 2 = 0.25 %, half 0.49 %.
        assert!(
            md.contains(&format!(
                "| {} | +0.95 % [+0.46, +1.44] | 2 | 1 | 0 | 1 |",
                CLAIMS[0].text
            )),
            "{md}"
        );
        assert_eq!(
            md.matches("\n| ").count(),
            2,
            "only the claim with rows: {md}"
        );
    }

    #[test]
    fn verdicts_follow_the_interval() {
        assert_eq!(measured(0.01, 0.001).verdict(), "reproduced");
        assert_eq!(measured(-0.01, 0.001).verdict(), "opposite");
        assert_eq!(measured(0.001, 0.01).verdict(), "not resolved");
        let mut one = measured(0.01, 0.001);
        one.runs = 1;
        assert_eq!(one.verdict(), "one run: no interval");
    }
}
