//! The two-level paper's headline claims checked scenario by scenario, each with a 95 %
//! interval and a verdict by rules fixed before the runs: the difference of two cases'
//! means (fairness, or makespan where the claim is about efficiency) relative to the
//! second case, with a Welch interval from the per-case standard deviations (it ignores the
//! positive correlation that common random numbers create, so it is conservative).

use crate::sched::affinity::PlatformAffinity;
use crate::sim::two_level::suite::{Case, CaseResult, Study};

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

/// The Markdown section: for every scenario of kind `Default` (or every scenario when
/// `all` is set), one row per claim.
pub fn claims_markdown(scenarios: &[ScenarioInfo], results: &[CaseResult], all: bool) -> String {
    let mut md = String::from(
        "## Headline claims with 95 % intervals\n\n\
         Relative difference of case A over case B (fairness: A/B − 1, positive = A fairer; \
         makespan: 1 − A/B, positive = A shorter), mean over the runs with a Welch 95 % \
         interval. Verdict (rule fixed before the runs): *reproduced* when the interval lies \
         above zero, *opposite* when it lies below, *not resolved* when it contains zero.\n\n\
         | scenario | claim | ours | runs | verdict |\n|---|---|---|---|---|\n",
    );
    for (s, info) in scenarios.iter().enumerate() {
        if !all && info.kind != "Default" {
            continue;
        }
        for claim in &CLAIMS {
            let (Some(a), Some(b)) = (find(results, s, claim.a), find(results, s, claim.b)) else {
                continue;
            };
            let (ma, sa, mb, sb) = if claim.makespan {
                (a.makespan_s, a.makespan_sd, b.makespan_s, b.makespan_sd)
            } else {
                (a.fairness, sample(a), b.fairness, sample(b))
            };
            // Makespan: the gain is (B − A) / B; fairness: (A − B) / B.
            let diff = if claim.makespan { mb - ma } else { ma - mb };
            let n = a.runs.min(b.runs);
            let se = (sa * sa / a.runs.max(1) as f64 + sb * sb / b.runs.max(1) as f64).sqrt();
            let half = if n >= 2 { t_975(n - 1) * se } else { 0.0 };
            let (rel, lo, hi) = (diff / mb, (diff - half) / mb, (diff + half) / mb);
            let verdict = if n < 2 {
                "one run: no interval"
            } else if lo > 0.0 {
                "reproduced"
            } else if hi < 0.0 {
                "opposite"
            } else {
                "not resolved"
            };
            md.push_str(&format!(
                "| {} | {} | {:+.2} % [{:+.2}, {:+.2}] | {} | {} |\n",
                info.name,
                claim.text,
                rel * 100.0,
                lo * 100.0,
                hi * 100.0,
                n,
                verdict
            ));
        }
    }
    md
}

/// Dynamic submission with two normalizations (issue 16's dynamic-PAF question): for each
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
