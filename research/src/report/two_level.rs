//! The `two-level` suite report: Markdown tables mirroring Figs. 3-7 and Section 6.5, a
//! CSV of every case, and SVG charts; all returned as strings for the CLI to write.

use std::fmt::Write as _;

use super::chart::{grouped_bars, Series};
use crate::sim::two_level::suite::{
    CaseResult, Study, ARRIVAL_MEANS_S, FIRST_LEVELS, SECOND_LEVELS,
};
use hetpilot_core::sched::{CoRunnerAffinity, PlatformAffinity};

/// The scenarios the results refer to.
#[derive(Debug, Clone)]
pub struct ScenarioInfo {
    /// The scenario's name, as its file gives it.
    pub name: String,
    /// Table 8 type.
    pub kind: String,
    /// Names of the scenario's applications.
    pub applications: Vec<String>,
}

/// Files of a report: `report.md`, `cases.csv` and `*.svg`.
#[derive(Debug, Clone)]
pub struct Report {
    /// `report.md`: the tables.
    pub markdown: String,
    /// `cases.csv`: one row per case.
    pub csv: String,
    /// (file name, SVG text).
    pub plots: Vec<(String, String)>,
}

/// Table 8's scenario types in the paper's order.
pub const KINDS: [&str; 5] = ["Default", "W/o Plat.", "S/L Plat.", "W/o App.", "S/L App."];

fn mean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

fn min_max(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::NAN, f64::NAN), |(lo, hi), v| {
            (lo.min(v).min(v), hi.max(v).max(v))
        })
}

fn fmt3(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "–".into()
    }
}

fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{v:+.1}%")
    } else {
        "–".into()
    }
}

fn is_plain(r: &CaseResult) -> bool {
    r.case.study == Study::Policies && r.case.arrival_mean_s.is_none()
}

/// Relative change of `a` over `b`, in percent.
fn rel(a: f64, b: f64) -> f64 {
    (a / b - 1.0) * 100.0
}

/// The largest finite value (NaN when there is none).
fn max_of(values: impl IntoIterator<Item = f64>) -> f64 {
    values.into_iter().fold(f64::NAN, f64::max)
}

/// Build the report. `command` is the exact command that produced it.
pub fn build(
    command: &str,
    runs: usize,
    scenarios: &[ScenarioInfo],
    results: &[CaseResult],
) -> Report {
    let suite = SuiteResults::new(scenarios, results);
    let mut md = String::new();
    let mut plots = Vec::new();
    suite.write_header(&mut md, command, runs);
    suite.write_platform_affinity(&mut md, &mut plots);
    suite.write_first_levels(&mut md, &mut plots);
    suite.write_second_levels(&mut md, &mut plots);
    suite.write_maf_vs_random(&mut md);
    suite.write_level_effect(&mut md, &mut plots);
    suite.write_co_runner_metric(&mut md);
    suite.write_variants(&mut md);
    suite.write_dynamic_submission(&mut md);
    suite.write_default_throughput(&mut md);
    md.push_str(&super::two_level_claims::claims_markdown(
        scenarios, results, false,
    ));
    md.push('\n');
    md.push_str(&super::two_level_claims::dynamic_markdown(
        scenarios, results,
    ));
    write_plot_index(&mut md, &plots);
    Report {
        markdown: md,
        csv: cases_csv(scenarios, results),
        plots,
    }
}

/// The report of a `--claims-only` run: the header, the claims table over every scenario
/// and the CSV (the figures need cases such a run leaves out).
pub fn claims_report(
    command: &str,
    runs: usize,
    scenarios: &[ScenarioInfo],
    results: &[CaseResult],
) -> Report {
    let suite = SuiteResults::new(scenarios, results);
    let mut md = String::new();
    suite.write_header(&mut md, command, runs);
    md.push_str(&super::two_level_claims::claims_markdown(
        scenarios, results, true,
    ));
    Report {
        markdown: md,
        csv: cases_csv(scenarios, results),
        plots: Vec::new(),
    }
}

/// (file name, SVG text) of the report's charts, in the order they are written.
type Plots = Vec<(String, String)>;

/// The suite's results with what every section selects them by.
struct SuiteResults<'a> {
    scenarios: &'a [ScenarioInfo],
    results: &'a [CaseResult],
    /// The bar groups of Figs. 3, 5 and 6: Table 8's scenario types, then "All".
    groups: Vec<String>,
    /// Scenarios with plain (all-at-once, policy study) results, ascending.
    static_ids: Vec<usize>,
}

impl<'a> SuiteResults<'a> {
    fn new(scenarios: &'a [ScenarioInfo], results: &'a [CaseResult]) -> Self {
        let groups = KINDS
            .iter()
            .map(|k| k.to_string())
            .chain(["All".to_string()])
            .collect();
        let mut static_ids: Vec<usize> = results
            .iter()
            .filter(|r| is_plain(r))
            .map(|r| r.case.scenario)
            .collect();
        static_ids.sort_unstable();
        static_ids.dedup();
        SuiteResults {
            scenarios,
            results,
            groups,
            static_ids,
        }
    }

    fn kind_of(&self, r: &CaseResult) -> &str {
        self.scenarios[r.case.scenario].kind.as_str()
    }

    fn in_group(&self, r: &CaseResult, g: &str) -> bool {
        g == "All" || self.kind_of(r) == g
    }

    /// The plain result of `first` + `second` (RPA) on scenario `s`.
    fn pick(&self, s: usize, first: &str, second: &str) -> Option<&'a CaseResult> {
        self.results.iter().find(|r| {
            is_plain(r)
                && rpa(r)
                && r.case.scenario == s
                && r.case.settings.first_level == first
                && r.case.settings.second_level == second
        })
    }

    /// Title and the paragraph on what the numbers are.
    fn write_header(&self, md: &mut String, command: &str, runs: usize) {
        let _ = writeln!(md, "# Two-level scheduling suite\n");
        let _ = writeln!(
            md,
            "Generated by `{command}`: {} scenarios, {} policy cases, {runs} seeded runs per case \
             (values are means over the runs). Fairness = 1 − σ/μ of throughput normalized to \
             Fastest-OneCore (higher is fairer); efficiency = makespan over Fairness + AllCore's \
             on the same scenario (lower is better).\n",
            self.scenarios.len(),
            self.results.len()
        );
    }

    /// Fig. 3 (platform-affinity metrics by scenario type, table and charts) and Fig. 4's
    /// per-case comparison of RPA with EPA.
    fn write_platform_affinity(&self, md: &mut String, plots: &mut Plots) {
        let groups = &self.groups;
        let _ = writeln!(md, "## Platform affinity metrics (Fig. 3)\n");
        let _ = writeln!(
            md,
            "Mean over PAF, AAF and PA-based RR with every second-level policy.\n"
        );
        let _ = writeln!(md, "| scenario type | fairness thr. | fairness EPA | fairness RPA | efficiency thr. | efficiency EPA | efficiency RPA |");
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        let metric_cases = |m: PlatformAffinity, g: &str| -> Vec<&CaseResult> {
            self.results
                .iter()
                .filter(|r| {
                    is_plain(r)
                        && is_affinity_policy(r)
                        && r.case.settings.platform_affinity == m
                        && self.in_group(r, g)
                })
                .collect()
        };
        let mut fig3_f = Vec::new();
        let mut fig3_e = Vec::new();
        for &m in PlatformAffinity::ALL {
            fig3_f.push(Series {
                label: m.as_str().into(),
                values: groups
                    .iter()
                    .map(|g| mean(metric_cases(m, g).iter().map(|r| r.fairness)))
                    .collect(),
            });
            fig3_e.push(Series {
                label: m.as_str().into(),
                values: groups
                    .iter()
                    .map(|g| mean(metric_cases(m, g).iter().map(|r| r.efficiency)))
                    .collect(),
            });
        }
        for (gi, g) in groups.iter().enumerate() {
            let _ = writeln!(
                md,
                "| {g} | {} | {} | {} | {} | {} | {} |",
                fmt3(fig3_f[0].values[gi]),
                fmt3(fig3_f[1].values[gi]),
                fmt3(fig3_f[2].values[gi]),
                fmt3(fig3_e[0].values[gi]),
                fmt3(fig3_e[1].values[gi]),
                fmt3(fig3_e[2].values[gi])
            );
        }
        let all = groups.len() - 1;
        let _ = writeln!(
            md,
            "\nRPA's fairness vs throughput: {}, vs EPA: {} (paper: +10%, +3%); RPA's efficiency gain vs throughput: {}, vs EPA: {} (paper: 8%, 2%).\n",
            pct(rel(fig3_f[2].values[all], fig3_f[0].values[all])),
            pct(rel(fig3_f[2].values[all], fig3_f[1].values[all])),
            pct(rel(fig3_e[0].values[all], fig3_e[2].values[all])),
            pct(rel(fig3_e[1].values[all], fig3_e[2].values[all])),
        );
        self.write_rpa_vs_epa(md);
        plots.push((
            "fig3-fairness.svg".to_string(),
            grouped_bars(
                "Fairness by platform-affinity metric (Fig. 3)",
                "fairness",
                groups,
                &fig3_f,
            ),
        ));
        plots.push((
            "fig3-efficiency.svg".to_string(),
            grouped_bars(
                "Normalized makespan by platform-affinity metric (Fig. 3)",
                "efficiency",
                groups,
                &fig3_e,
            ),
        ));
    }

    /// Fig. 4: per case, how often and by how much RPA beats EPA.
    fn write_rpa_vs_epa(&self, md: &mut String) {
        let results = self.results;
        let mut better_f = Vec::new();
        let mut better_e = Vec::new();
        for r in results.iter().filter(|r| {
            is_plain(r)
                && r.case.settings.platform_affinity == PlatformAffinity::Reciprocal
                && is_affinity_policy(r)
        }) {
            if let Some(e) = results.iter().find(|e| {
                is_plain(e)
                    && e.case.scenario == r.case.scenario
                    && e.case.settings.platform_affinity == PlatformAffinity::Egocentric
                    && e.case.settings.first_level == r.case.settings.first_level
                    && e.case.settings.second_level == r.case.settings.second_level
            }) {
                better_f.push(rel(r.fairness, e.fairness));
                better_e.push(rel(e.efficiency, r.efficiency));
            }
        }
        let share = |v: &[f64]| {
            v.iter().filter(|&&x| x > 0.05).count() as f64 / v.len().max(1) as f64 * 100.0
        };
        let _ = writeln!(
            md,
            "Fig. 4 (RPA vs EPA per case): RPA is fairer in {:.1}% of the cases (up to {}), more efficient in {:.1}% (up to {}); paper: 59.7% up to 24.3%, 64.3% up to 10.2%.\n",
            share(&better_f), pct(max_of(better_f.iter().cloned())),
            share(&better_e), pct(max_of(better_e.iter().cloned())),
        );
    }

    /// One row per policy in `names`, one column per scenario group: mean fairness with
    /// the range of the per-scenario means, and mean efficiency (plain RPA cases that
    /// `select` accepts). Returns the fairness and efficiency series for the charts.
    fn write_level_table(
        &self,
        md: &mut String,
        names: &[&str],
        select: &dyn Fn(&CaseResult, &str) -> bool,
    ) -> (Vec<Series>, Vec<Series>) {
        let groups = &self.groups;
        let _ = writeln!(
            md,
            "| policy | {} |",
            groups
                .iter()
                .map(|g| format!("{g} fairness [min–max] / efficiency"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(md, "|---|{}", "---|".repeat(groups.len()));
        let mut fs = Vec::new();
        let mut es = Vec::new();
        for &name in names {
            let mut cells = Vec::new();
            let mut fv = Vec::new();
            let mut ev = Vec::new();
            for g in groups {
                let sel: Vec<&CaseResult> = self
                    .results
                    .iter()
                    .filter(|r| is_plain(r) && rpa(r) && self.in_group(r, g) && select(r, name))
                    .collect();
                let f = mean(sel.iter().map(|r| r.fairness));
                let e = mean(sel.iter().map(|r| r.efficiency));
                let (lo, hi) = min_max(per_scenario_fairness(&sel));
                cells.push(format!(
                    "{} [{}–{}] / {}",
                    fmt3(f),
                    fmt3(lo),
                    fmt3(hi),
                    fmt3(e)
                ));
                fv.push(f);
                ev.push(e);
            }
            let _ = writeln!(md, "| {name} | {} |", cells.join(" | "));
            fs.push(Series {
                label: name.into(),
                values: fv,
            });
            es.push(Series {
                label: name.into(),
                values: ev,
            });
        }
        let _ = writeln!(md);
        (fs, es)
    }

    /// Fig. 5: the first-level policies (table and charts).
    fn write_first_levels(&self, md: &mut String, plots: &mut Plots) {
        let _ = writeln!(md, "## First-level policies (Fig. 5)\n");
        let _ = writeln!(md, "RPA and normalized difference; each policy averaged over the four second-level policies. `water-fill` is ours (not in the paper).\n");
        let (f5, e5) =
            self.write_level_table(md, &FIRST_LEVELS, &|r, n| r.case.settings.first_level == n);
        plots.push((
            "fig5-fairness.svg".into(),
            grouped_bars(
                "Fairness by first-level policy (Fig. 5)",
                "fairness",
                &self.groups,
                &f5,
            ),
        ));
        plots.push((
            "fig5-efficiency.svg".into(),
            grouped_bars(
                "Normalized makespan by first-level policy (Fig. 5)",
                "efficiency",
                &self.groups,
                &e5,
            ),
        ));
    }

    /// Fig. 6: the second-level policies (table and charts).
    fn write_second_levels(&self, md: &mut String, plots: &mut Plots) {
        let _ = writeln!(md, "## Second-level policies (Fig. 6)\n");
        let _ = writeln!(md, "RPA and normalized difference; each policy averaged over the paper's four first-level policies.\n");
        let (f6, e6) = self.write_level_table(md, &SECOND_LEVELS, &|r, n| {
            r.case.settings.second_level == n && r.case.settings.first_level != "water-fill"
        });
        plots.push((
            "fig6-fairness.svg".into(),
            grouped_bars(
                "Fairness by second-level policy (Fig. 6)",
                "fairness",
                &self.groups,
                &f6,
            ),
        ));
        plots.push((
            "fig6-efficiency.svg".into(),
            grouped_bars(
                "Normalized makespan by second-level policy (Fig. 6)",
                "efficiency",
                &self.groups,
                &e6,
            ),
        ));
    }

    /// Section 6.3: MAF vs Random under PA-based RR.
    fn write_maf_vs_random(&self, md: &mut String) {
        let maf_vs_random: Vec<(f64, f64)> = self
            .static_ids
            .iter()
            .filter_map(|&s| {
                Some((
                    self.pick(s, "pa-rr", "maf")?,
                    self.pick(s, "pa-rr", "random")?,
                ))
            })
            .map(|(m, r)| (rel(m.fairness, r.fairness), rel(r.efficiency, m.efficiency)))
            .collect();
        let _ = writeln!(
            md,
            "With PA-based RR, MAF vs Random: fairness {} on average (max {}), efficiency {} on average (max {}); paper: 2.0% (max 5%), 3.7% (max 9%).\n",
            pct(mean(maf_vs_random.iter().map(|x| x.0))), pct(max_of(maf_vs_random.iter().map(|x| x.0))),
            pct(mean(maf_vs_random.iter().map(|x| x.1))), pct(max_of(maf_vs_random.iter().map(|x| x.1))),
        );
    }

    /// Fig. 7: per scenario, the gain of the best over the worst policy at each level
    /// (table and charts).
    fn write_level_effect(&self, md: &mut String, plots: &mut Plots) {
        let _ = writeln!(md, "## First-level vs second-level effect (Fig. 7)\n");
        let _ = writeln!(md, "Per scenario, best over worst policy: first level = the paper's four first-level policies with MAF; second level = the four second-level policies with PA-based RR (RPA). Fairness gain = best/worst − 1; efficiency gain = worst/best makespan − 1.\n");
        let _ = writeln!(md, "| scenario | type | 1st-level fairness | 2nd-level fairness | 1st-level efficiency | 2nd-level efficiency |");
        let _ = writeln!(md, "|---|---|---|---|---|---|");
        let mut first_f = Vec::new();
        let mut second_f = Vec::new();
        let mut first_e = Vec::new();
        let mut second_e = Vec::new();
        let spread = |vals: Vec<(f64, f64)>| {
            let (flo, fhi) = min_max(vals.iter().map(|v| v.0));
            let (elo, ehi) = min_max(vals.iter().map(|v| v.1));
            ((fhi / flo - 1.0) * 100.0, (ehi / elo - 1.0) * 100.0)
        };
        for &s in &self.static_ids {
            let firsts: Vec<(f64, f64)> = ["fairness", "paf", "aaf", "pa-rr"]
                .iter()
                .filter_map(|f| self.pick(s, f, "maf"))
                .map(|r| (r.fairness, r.efficiency))
                .collect();
            let seconds: Vec<(f64, f64)> = SECOND_LEVELS
                .iter()
                .filter_map(|p| self.pick(s, "pa-rr", p))
                .map(|r| (r.fairness, r.efficiency))
                .collect();
            let (ff, fe) = spread(firsts);
            let (sf, se) = spread(seconds);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                self.scenarios[s].name,
                self.scenarios[s].kind,
                pct(ff),
                pct(sf),
                pct(fe),
                pct(se)
            );
            first_f.push(ff);
            second_f.push(sf);
            first_e.push(fe);
            second_e.push(se);
        }
        let mx = |v: &[f64]| max_of(v.iter().cloned());
        let _ = writeln!(
            md,
            "| **mean (max)** | | {} ({}) | {} ({}) | {} ({}) | {} ({}) |\n\nPaper: fairness up to 38% by the first level vs up to 8% by the second.\n",
            pct(mean(first_f.iter().cloned())), pct(mx(&first_f)), pct(mean(second_f.iter().cloned())), pct(mx(&second_f)),
            pct(mean(first_e.iter().cloned())), pct(mx(&first_e)), pct(mean(second_e.iter().cloned())), pct(mx(&second_e)),
        );
        let names: Vec<String> = self
            .static_ids
            .iter()
            .map(|&s| self.scenarios[s].name.clone())
            .collect();
        plots.push((
            "fig7-fairness.svg".into(),
            grouped_bars(
                "Fairness gain of best over worst policy, % (Fig. 7a/c)",
                "%",
                &names,
                &level_series(first_f, second_f),
            ),
        ));
        plots.push((
            "fig7-efficiency.svg".into(),
            grouped_bars(
                "Efficiency gain of best over worst policy, % (Fig. 7b/d)",
                "%",
                &names,
                &level_series(first_e, second_e),
            ),
        ));
    }

    /// Section 6.2: raw vs normalized difference as MAF's co-runner affinity.
    fn write_co_runner_metric(&self, md: &mut String) {
        let _ = writeln!(md, "## Co-runner affinity metric with MAF (Section 6.2)\n");
        let _ = writeln!(md, "| first level | fairness normalized | fairness raw | efficiency normalized | efficiency raw |");
        let _ = writeln!(md, "|---|---|---|---|---|");
        for first in FIRST_LEVELS {
            let norm: Vec<&CaseResult> = self
                .results
                .iter()
                .filter(|r| {
                    is_plain(r)
                        && rpa(r)
                        && r.case.settings.first_level == first
                        && r.case.settings.second_level == "maf"
                })
                .collect();
            let raw: Vec<&CaseResult> = self
                .results
                .iter()
                .filter(|r| {
                    r.case.study == Study::RawDifference
                        && r.case.settings.first_level == first
                        && r.case.settings.co_runner_affinity == CoRunnerAffinity::RawDifference
                })
                .collect();
            let _ = writeln!(
                md,
                "| {first} | {} | {} | {} | {} |",
                fmt3(mean(norm.iter().map(|r| r.fairness))),
                fmt3(mean(raw.iter().map(|r| r.fairness))),
                fmt3(mean(norm.iter().map(|r| r.efficiency))),
                fmt3(mean(raw.iter().map(|r| r.efficiency)))
            );
        }
    }

    /// Section 6.5's variants (D_unit, P_unit, pairwise, affinity once), each against the
    /// same policies' plain cases.
    fn write_variants(&self, md: &mut String) {
        let _ = writeln!(md, "\n## Variants (Section 6.5)\n");
        let _ = writeln!(md, "| variant | scenarios | fairness | reference fairness | Δ fairness | efficiency | reference efficiency |");
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        let same = |v: &CaseResult, r: &CaseResult| {
            r.case.settings.first_level == v.case.settings.first_level
                && r.case.settings.second_level == v.case.settings.second_level
                && rpa(r)
        };
        for first in ["pa-rr", "water-fill"] {
            self.write_variant_row(
                md,
                &format!("{first}: D_unit = 200 vs 1, MAF (paper: −3% fairness, same efficiency)"),
                &|r| r.case.settings.first_level == first && r.case.settings.d_unit == 200,
                &same,
            );
        }
        self.write_variant_row(
            md,
            "pa-rr + CA-based RR: P_unit = 20 vs 1 (paper: almost no difference)",
            &|r| r.case.settings.p_unit == 20,
            &same,
        );
        for first in ["pa-rr", "water-fill"] {
            self.write_variant_row(
                md,
                &format!("{first} + MAF pairwise vs all combinations (paper: negligible)"),
                &|r| r.case.settings.first_level == first && r.case.settings.pairwise,
                &same,
            );
            self.write_variant_row(
                md,
                &format!(
                    "{first} + MAF affinity computed once vs every iteration (paper: almost none)"
                ),
                &|r| {
                    r.case.settings.first_level == first
                        && !r.case.settings.recompute_co_runner_affinity
                },
                &same,
            );
        }
    }

    /// One variant's row: its cases paired with the plain case `reference` accepts on the
    /// same scenario; nothing when no variant case ran.
    fn write_variant_row(
        &self,
        md: &mut String,
        label: &str,
        variant: &dyn Fn(&CaseResult) -> bool,
        reference: &dyn Fn(&CaseResult, &CaseResult) -> bool,
    ) {
        let results = self.results;
        let pairs: Vec<(&CaseResult, &CaseResult)> = results
            .iter()
            .filter(|r| r.case.study == Study::Variants && variant(r))
            .filter_map(|v| {
                results
                    .iter()
                    .find(|r| is_plain(r) && r.case.scenario == v.case.scenario && reference(v, r))
                    .map(|r| (v, r))
            })
            .collect();
        if pairs.is_empty() {
            return;
        }
        let vf = mean(pairs.iter().map(|p| p.0.fairness));
        let rf = mean(pairs.iter().map(|p| p.1.fairness));
        let _ = writeln!(
            md,
            "| {label} | {} | {} | {} | {} | {} | {} |",
            pairs.len(),
            fmt3(vf),
            fmt3(rf),
            pct(rel(vf, rf)),
            fmt3(mean(pairs.iter().map(|p| p.0.efficiency))),
            fmt3(mean(pairs.iter().map(|p| p.1.efficiency)))
        );
    }

    /// Section 6.5's dynamic submission: fairness / efficiency per first-level policy and
    /// mean Poisson gap, then the same scenarios submitted all at once.
    fn write_dynamic_submission(&self, md: &mut String) {
        let dynamic: Vec<&CaseResult> = self
            .results
            .iter()
            .filter(|r| r.case.study == Study::Dynamic)
            .collect();
        if dynamic.is_empty() {
            return;
        }
        let _ = writeln!(md, "\n## Dynamic submission (Section 6.5)\n");
        let _ = writeln!(md, "Default and W/o App. workloads, Poisson submissions; MAF (RPA) in the second level; mean fairness / efficiency over those scenarios.\n");
        let _ = writeln!(
            md,
            "| first level | {} |",
            ARRIVAL_MEANS_S
                .iter()
                .map(|m| format!("mean gap {m:.0} s"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(md, "|---|{}", "---|".repeat(ARRIVAL_MEANS_S.len()));
        let mut rows: Vec<(String, Vec<&CaseResult>)> = vec![(
            "fairness + all-core (baseline)".into(),
            dynamic
                .iter()
                .copied()
                .filter(|r| r.case.settings.second_level == "all-core")
                .collect(),
        )];
        for first in FIRST_LEVELS {
            rows.push((
                first.to_string(),
                dynamic
                    .iter()
                    .copied()
                    .filter(|r| {
                        r.case.settings.first_level == first
                            && r.case.settings.second_level == "maf"
                    })
                    .collect(),
            ));
        }
        for (label, sel) in rows {
            let cells: Vec<String> = ARRIVAL_MEANS_S
                .iter()
                .map(|&m| {
                    let s: Vec<&&CaseResult> = sel
                        .iter()
                        .filter(|r| r.case.arrival_mean_s == Some(m))
                        .collect();
                    format!(
                        "{} / {}",
                        fmt3(mean(s.iter().map(|r| r.fairness))),
                        fmt3(mean(s.iter().map(|r| r.efficiency)))
                    )
                })
                .collect();
            let _ = writeln!(md, "| {label} | {} |", cells.join(" | "));
        }
        let dyn_ids: Vec<usize> = dynamic.iter().map(|r| r.case.scenario).collect();
        let static_means: Vec<String> = std::iter::once(("fairness", "all-core"))
            .chain(FIRST_LEVELS.iter().map(|f| (*f, "maf")))
            .map(|(f, s)| {
                fmt3(mean(
                    self.results
                        .iter()
                        .filter(|r| {
                            is_plain(r)
                                && rpa(r)
                                && dyn_ids.contains(&r.case.scenario)
                                && r.case.settings.first_level == f
                                && r.case.settings.second_level == s
                        })
                        .map(|r| r.fairness),
                ))
            })
            .collect();
        let _ = writeln!(
            md,
            "\nSame scenarios, all submitted at once (fairness): baseline {}, {}.\n",
            static_means[0],
            FIRST_LEVELS
                .iter()
                .zip(&static_means[1..])
                .map(|(f, v)| format!("{f} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    /// Normalized throughput of each application in the default scenario (RPA, MAF), per
    /// first-level policy.
    fn write_default_throughput(&self, md: &mut String) {
        let Some(default) = self.scenarios.iter().position(|s| s.kind == "Default") else {
            return;
        };
        let _ = writeln!(
            md,
            "## Normalized throughput per application, default scenario (RPA, MAF)\n"
        );
        let apps = &self.scenarios[default].applications;
        let _ = writeln!(md, "| first level | {} | fairness |", apps.join(" | "));
        let _ = writeln!(md, "|---|{}---|", "---|".repeat(apps.len()));
        for first in FIRST_LEVELS {
            if let Some(r) = self.pick(default, first, "maf") {
                let _ = writeln!(
                    md,
                    "| {first} | {} | {} |",
                    r.normalized
                        .iter()
                        .map(|v| fmt3(*v))
                        .collect::<Vec<_>>()
                        .join(" | "),
                    fmt3(r.fairness)
                );
            }
        }
        let _ = writeln!(md);
    }
}

/// The cases of Figs. 3 and 4: the affinity-based first levels (PAF, AAF, PA-based RR).
fn is_affinity_policy(r: &CaseResult) -> bool {
    ["paf", "aaf", "pa-rr"].contains(&r.case.settings.first_level.as_str())
}

/// Whether a case uses RPA (the Fairness policy ignores the platform-affinity metric).
fn rpa(r: &CaseResult) -> bool {
    r.case.settings.first_level == "fairness"
        || r.case.settings.platform_affinity == PlatformAffinity::Reciprocal
}

/// Mean fairness of each scenario among `sel` (the min/max of the paper's bars).
fn per_scenario_fairness(sel: &[&CaseResult]) -> Vec<f64> {
    let mut ids: Vec<usize> = sel.iter().map(|r| r.case.scenario).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.iter()
        .map(|&s| {
            mean(
                sel.iter()
                    .filter(|r| r.case.scenario == s)
                    .map(|r| r.fairness),
            )
        })
        .collect()
}

/// Fig. 7's two bars per scenario: the first level's gain and the second level's.
fn level_series(first: Vec<f64>, second: Vec<f64>) -> [Series; 2] {
    [
        Series {
            label: "first level".into(),
            values: first,
        },
        Series {
            label: "second level".into(),
            values: second,
        },
    ]
}

/// The closing line linking every chart and the CSV.
fn write_plot_index(md: &mut String, plots: &Plots) {
    let _ = writeln!(
        md,
        "Plots: {}. Every case: `cases.csv`.",
        plots
            .iter()
            .map(|(f, _)| format!("[{f}]({f})"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// `cases.csv`: one line per case with its settings and aggregated outcome.
fn cases_csv(scenarios: &[ScenarioInfo], results: &[CaseResult]) -> String {
    let mut csv = String::from("scenario,kind,study,first_level,second_level,platform_affinity,co_runner_affinity,top_k_percent,d_unit,p_unit,pairwise,recompute_co_runner_affinity,arrival_mean_s,runs,fairness,fairness_sd,makespan_s,efficiency\n");
    for r in results {
        let s = &r.case.settings;
        let _ = writeln!(
            csv,
            "{},{},{:?},{},{},{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.3},{:.6}",
            scenarios[r.case.scenario].name,
            scenarios[r.case.scenario].kind,
            r.case.study,
            s.first_level,
            s.second_level,
            s.platform_affinity,
            s.co_runner_affinity,
            s.top_k_percent,
            s.d_unit,
            s.p_unit,
            s.pairwise,
            s.recompute_co_runner_affinity,
            r.case
                .arrival_mean_s
                .map_or(String::new(), |m| format!("{m}")),
            r.runs,
            r.fairness,
            r.fairness_sd,
            r.makespan_s,
            r.efficiency
        );
    }
    csv
}
