//! The multiple-PTG experiment's report (`hetpilot-research simulate ptg`): the paper's Figures
//! 2–4 (distributions of average stretch, makespan and maximum stretch per algorithm and
//! PTG family, as tables and box plots), Figures 5–7 (mean metrics relative to SELFISH,
//! with the non-dominated algorithms), Figure 8 (mean maximum stretch against the number
//! of PTGs), Table 2 (utilization per cluster), how often a PTG ends sooner than alone
//! (§5.2.1), and the scheduling times (§5.2.7). Everything is rendered to strings.

use std::fmt::Write as _;

use plotters::prelude::*;

use super::chart::ChartError;
use crate::ptg_generator::PtgFamily;
use crate::sim::ptg::RunRecord;

/// A metric of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Σ C / Σ C*.
    AverageStretch,
    /// The overall makespan, seconds.
    Makespan,
    /// max C / C*.
    MaximumStretch,
    /// Busy processor-time over P × makespan, in percent.
    Utilization,
}

impl Metric {
    /// The metric's value in `record`.
    pub fn of(self, record: &RunRecord) -> f64 {
        match self {
            Metric::AverageStretch => record.average_stretch,
            Metric::Makespan => record.makespan,
            Metric::MaximumStretch => record.maximum_stretch,
            Metric::Utilization => 100.0 * record.utilization,
        }
    }

    /// Its name in tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            Metric::AverageStretch => "average stretch",
            Metric::Makespan => "makespan (s)",
            Metric::MaximumStretch => "maximum stretch",
            Metric::Utilization => "utilization (%)",
        }
    }
}

/// Minimum, quartiles and maximum of a sample (quartiles interpolated linearly between
/// order statistics).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FiveNumbers {
    /// The smallest value.
    pub min: f64,
    /// The first quartile.
    pub q1: f64,
    /// The median.
    pub median: f64,
    /// The third quartile.
    pub q3: f64,
    /// The largest value.
    pub max: f64,
}

impl FiveNumbers {
    /// The five numbers of `values` (None if empty).
    pub fn of(mut values: Vec<f64>) -> Option<FiveNumbers> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let at = |q: f64| {
            let x = q * (values.len() - 1) as f64;
            let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
            values[lo] + (values[hi] - values[lo]) * (x - lo as f64)
        };
        Some(FiveNumbers {
            min: values[0],
            q1: at(0.25),
            median: at(0.5),
            q3: at(0.75),
            max: values[values.len() - 1],
        })
    }
}

/// Whether each point `(x, y)` is not dominated (no other point is at most as large on
/// both coordinates and smaller on one): lower is better on both.
pub fn non_dominated(points: &[(f64, f64)]) -> Vec<bool> {
    points
        .iter()
        .map(|&(x, y)| {
            !points
                .iter()
                .any(|&(a, b)| a <= x && b <= y && (a < x || b < y))
        })
        .collect()
}

/// One algorithm's means relative to the baseline, over the scenarios (Figs. 5–7).
#[derive(Debug, Clone, PartialEq)]
pub struct RelativeMeans {
    /// The algorithm.
    pub algorithm: String,
    /// Mean of makespan / the baseline's makespan.
    pub makespan: f64,
    /// Mean of average stretch / the baseline's.
    pub average_stretch: f64,
    /// Mean of maximum stretch / the baseline's.
    pub maximum_stretch: f64,
}

/// The records of one suite, and the orders to present them in.
#[derive(Debug, Clone)]
pub struct PtgReport<'a> {
    records: &'a [RunRecord],
    /// Algorithms, in presentation order.
    pub algorithms: Vec<String>,
    /// Cluster names, in Table 2's order.
    pub clusters: Vec<String>,
    /// Families, in the box plots' order.
    pub families: Vec<PtgFamily>,
    /// The numbers of PTGs.
    pub counts: Vec<usize>,
}

impl<'a> PtgReport<'a> {
    /// A report over `records`; the orders are those of first appearance.
    pub fn new(records: &'a [RunRecord]) -> PtgReport<'a> {
        fn firsts<T: PartialEq + Clone>(it: impl Iterator<Item = T>) -> Vec<T> {
            let mut out: Vec<T> = Vec::new();
            for x in it {
                if !out.contains(&x) {
                    out.push(x);
                }
            }
            out
        }
        let mut counts = firsts(records.iter().map(|r| r.ptg_count));
        counts.sort_unstable();
        PtgReport {
            records,
            algorithms: firsts(records.iter().map(|r| r.algorithm.clone())),
            clusters: firsts(records.iter().map(|r| r.cluster.clone())),
            families: firsts(records.iter().map(|r| r.family)),
            counts,
        }
    }

    fn values(
        &self,
        metric: Metric,
        algorithm: &str,
        keep: impl Fn(&RunRecord) -> bool,
    ) -> Vec<f64> {
        self.records
            .iter()
            .filter(|r| r.algorithm == algorithm && keep(r))
            .map(|r| metric.of(r))
            .collect()
    }

    /// The distribution of `metric` for `algorithm`, over one family or all (Figs. 2–4).
    pub fn distribution(
        &self,
        metric: Metric,
        algorithm: &str,
        family: Option<PtgFamily>,
    ) -> Option<FiveNumbers> {
        FiveNumbers::of(self.values(metric, algorithm, |r| family.is_none_or(|f| r.family == f)))
    }

    /// A Markdown table of `metric`'s distribution over all PTGs, with each family's
    /// median.
    pub fn distribution_table(&self, metric: Metric) -> String {
        let mut t = String::from("| algorithm | min | Q1 | median | Q3 | max |");
        for f in &self.families {
            let _ = write!(t, " median {} |", f.label());
        }
        t.push('\n');
        t.push_str("|---|---:|---:|---:|---:|---:|");
        for _ in &self.families {
            t.push_str("---:|");
        }
        t.push('\n');
        for a in &self.algorithms {
            let Some(d) = self.distribution(metric, a, None) else {
                continue;
            };
            let _ = write!(
                t,
                "| {a} | {} | {} | {} | {} | {} |",
                num(d.min),
                num(d.q1),
                num(d.median),
                num(d.q3),
                num(d.max)
            );
            for &f in &self.families {
                let m = self
                    .distribution(metric, a, Some(f))
                    .map_or(f64::NAN, |d| d.median);
                let _ = write!(t, " {} |", num(m));
            }
            t.push('\n');
        }
        t
    }

    /// Mean metrics relative to `baseline` scenario by scenario (Figs. 5–7).
    pub fn relative_to(&self, baseline: &str) -> Vec<RelativeMeans> {
        let base: std::collections::HashMap<usize, &RunRecord> = self
            .records
            .iter()
            .filter(|r| r.algorithm == baseline)
            .map(|r| (r.scenario, r))
            .collect();
        self.algorithms
            .iter()
            .filter_map(|a| {
                let mut sums = [0.0; 3];
                let mut n = 0.0;
                for r in self.records.iter().filter(|r| &r.algorithm == a) {
                    let Some(b) = base.get(&r.scenario) else {
                        continue;
                    };
                    sums[0] += r.makespan / b.makespan;
                    sums[1] += r.average_stretch / b.average_stretch;
                    sums[2] += r.maximum_stretch / b.maximum_stretch;
                    n += 1.0;
                }
                (n > 0.0).then(|| RelativeMeans {
                    algorithm: a.clone(),
                    makespan: sums[0] / n,
                    average_stretch: sums[1] / n,
                    maximum_stretch: sums[2] / n,
                })
            })
            .collect()
    }

    /// A Markdown table of [`Self::relative_to`], with the non-dominated algorithms of each
    /// pair of metrics marked (Fig. 5: makespan × average stretch, Fig. 6: makespan ×
    /// maximum stretch, Fig. 7: average × maximum stretch).
    pub fn relative_table(&self, baseline: &str) -> String {
        let rel = self.relative_to(baseline);
        let pairs = |f: fn(&RelativeMeans) -> (f64, f64)| {
            non_dominated(&rel.iter().map(f).collect::<Vec<_>>())
        };
        let fig5 = pairs(|r| (r.makespan, r.average_stretch));
        let fig6 = pairs(|r| (r.makespan, r.maximum_stretch));
        let fig7 = pairs(|r| (r.average_stretch, r.maximum_stretch));
        let mut t = String::from(
            "| algorithm | makespan | average stretch | maximum stretch | non-dominated in |\n|---|---:|---:|---:|---|\n",
        );
        for (k, r) in rel.iter().enumerate() {
            let figs: Vec<&str> = [(fig5[k], "5"), (fig6[k], "6"), (fig7[k], "7")]
                .iter()
                .filter(|(nd, _)| *nd)
                .map(|(_, f)| *f)
                .collect();
            let _ = writeln!(
                t,
                "| {} | {:.3} | {:.3} | {:.3} | {} |",
                r.algorithm,
                r.makespan,
                r.average_stretch,
                r.maximum_stretch,
                if figs.is_empty() {
                    "-".to_string()
                } else {
                    format!("Fig. {}", figs.join(", "))
                }
            );
        }
        t
    }

    /// Mean of `metric` per number of PTGs, per algorithm (Fig. 8 for the maximum
    /// stretch): `result[a][k]` for `self.counts[k]`.
    pub fn mean_by_count(&self, metric: Metric) -> Vec<Vec<f64>> {
        self.algorithms
            .iter()
            .map(|a| {
                self.counts
                    .iter()
                    .map(|&n| mean(&self.values(metric, a, |r| r.ptg_count == n)))
                    .collect()
            })
            .collect()
    }

    /// A Markdown table of [`Self::mean_by_count`].
    pub fn by_count_table(&self, metric: Metric) -> String {
        let means = self.mean_by_count(metric);
        let mut t = String::from("| algorithm |");
        for n in &self.counts {
            let _ = write!(t, " N = {n} |");
        }
        t.push_str("\n|---|");
        t.push_str(&"---:|".repeat(self.counts.len()));
        t.push('\n');
        for (a, row) in self.algorithms.iter().zip(&means) {
            let _ = write!(t, "| {a} |");
            for v in row {
                let _ = write!(t, " {} |", num(*v));
            }
            t.push('\n');
        }
        t
    }

    /// Table 2: mean utilization (%) per algorithm and cluster.
    pub fn utilization_table(&self) -> String {
        let mut t = String::from("| algorithm |");
        for c in &self.clusters {
            let _ = write!(t, " {c} |");
        }
        t.push_str("\n|---|");
        t.push_str(&"---:|".repeat(self.clusters.len()));
        t.push('\n');
        for a in &self.algorithms {
            let _ = write!(t, "| {a} |");
            for c in &self.clusters {
                let _ = write!(
                    t,
                    " {:.2} |",
                    mean(&self.values(Metric::Utilization, a, |r| &r.cluster == c))
                );
            }
            t.push('\n');
        }
        t
    }

    /// The share of scenarios in which some PTG ends sooner than alone, per algorithm
    /// (§5.2.1: 6% for the CRA family).
    pub fn shorter_than_alone(&self, algorithm: &str) -> f64 {
        let runs: Vec<&RunRecord> = self
            .records
            .iter()
            .filter(|r| r.algorithm == algorithm)
            .collect();
        if runs.is_empty() {
            return f64::NAN;
        }
        runs.iter()
            .filter(|r| r.minimum_stretch < 1.0 - 1e-9)
            .count() as f64
            / runs.len() as f64
    }

    /// A Markdown table of mean scheduling seconds per algorithm (as measured by the
    /// caller; left out without `timing`) and of [`Self::shorter_than_alone`].
    pub fn times_table(&self, timing: bool) -> String {
        if !timing {
            let mut t = String::from(
                "| algorithm | scenarios with a PTG shorter than alone |\n|---|---:|\n",
            );
            for a in &self.algorithms {
                let _ = writeln!(t, "| {a} | {:.1}% |", 100.0 * self.shorter_than_alone(a));
            }
            return t;
        }
        let mut t = String::from(
            "| algorithm | mean ms per scenario | scenarios with a PTG shorter than alone |\n|---|---:|---:|\n",
        );
        for a in &self.algorithms {
            let secs: Vec<f64> = self
                .records
                .iter()
                .filter(|r| &r.algorithm == a)
                .map(|r| r.seconds)
                .collect();
            let _ = writeln!(
                t,
                "| {a} | {:.3} | {:.1}% |",
                1e3 * mean(&secs),
                100.0 * self.shorter_than_alone(a)
            );
        }
        t
    }

    /// Every record as CSV, with a header.
    pub fn csv(&self) -> String {
        let mut t = String::from(
            "scenario,family,ptgs,cluster,algorithm,average_stretch,makespan,maximum_stretch,minimum_stretch,utilization,seconds\n",
        );
        for r in self.records {
            let _ = writeln!(
                t,
                "{},{},{},{},{},{:.6},{:.4},{:.6},{:.6},{:.6},{:.6}",
                r.scenario,
                r.family.label(),
                r.ptg_count,
                r.cluster,
                r.algorithm,
                r.average_stretch,
                r.makespan,
                r.maximum_stretch,
                r.minimum_stretch,
                r.utilization,
                r.seconds
            );
        }
        t
    }

    /// Figs. 2–4: one box plot per algorithm and family (then all PTGs), min-to-max
    /// whiskers, Q1–Q3 boxes, median bars; a logarithmic axis when `log`.
    pub fn box_plot_svg(
        &self,
        metric: Metric,
        title: &str,
        log: bool,
    ) -> Result<String, ChartError> {
        let groups: Vec<Option<PtgFamily>> = self
            .families
            .iter()
            .map(|&f| Some(f))
            .chain(std::iter::once(None))
            .collect();
        let stats: Vec<Vec<Option<FiveNumbers>>> = self
            .algorithms
            .iter()
            .map(|a| {
                groups
                    .iter()
                    .map(|&g| self.distribution(metric, a, g))
                    .collect()
            })
            .collect();
        let all: Vec<f64> = stats
            .iter()
            .flatten()
            .flatten()
            .flat_map(|s| [s.min, s.max])
            .collect();
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = all.iter().copied().fold(0.0, f64::max);
        let (lo, hi) = if lo.is_finite() && hi > 0.0 {
            (lo, hi)
        } else {
            (0.1, 1.0)
        };
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (1400, 620)).into_drawing_area();
            root.fill(&WHITE)?;
            let n = self.algorithms.len().max(1) as f64;
            let names = self.algorithms.clone();
            let label = |x: &f64| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    names.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            };
            let legend: Vec<String> = groups
                .iter()
                .map(|g| g.map_or("all".to_string(), |f| f.label().to_string()))
                .collect();
            macro_rules! draw {
                ($chart:expr) => {{
                    let mut chart = $chart;
                    chart
                        .configure_mesh()
                        .disable_x_mesh()
                        .y_desc(metric.label())
                        .x_labels(self.algorithms.len() * 2 + 1)
                        .x_label_formatter(&label)
                        .x_label_style(
                            ("sans-serif", 11)
                                .into_font()
                                .transform(FontTransform::Rotate90),
                        )
                        .draw()?;
                    let width = 0.8 / groups.len() as f64;
                    for (a, row) in stats.iter().enumerate() {
                        for (g, s) in row.iter().enumerate() {
                            let Some(s) = s else { continue };
                            let color = GROUP_COLORS[g % GROUP_COLORS.len()];
                            let x0 = a as f64 + 0.1 + g as f64 * width;
                            let xm = x0 + width * 0.45;
                            chart.draw_series(std::iter::once(PathElement::new(
                                vec![(xm, s.min), (xm, s.max)],
                                color,
                            )))?;
                            chart.draw_series(std::iter::once(Rectangle::new(
                                [(x0, s.q1), (x0 + width * 0.9, s.q3)],
                                color.mix(0.5).filled(),
                            )))?;
                            chart.draw_series(std::iter::once(PathElement::new(
                                vec![(x0, s.median), (x0 + width * 0.9, s.median)],
                                BLACK.stroke_width(2),
                            )))?;
                        }
                    }
                    for (g, name) in legend.iter().enumerate() {
                        let color = GROUP_COLORS[g % GROUP_COLORS.len()];
                        chart
                            .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())?
                            .label(name.clone())
                            .legend(move |(x, y)| {
                                Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                            });
                    }
                    chart
                        .configure_series_labels()
                        .background_style(WHITE.mix(0.8))
                        .border_style(BLACK)
                        .position(SeriesLabelPosition::UpperRight)
                        .draw()?;
                }};
            }
            macro_rules! builder {
                () => {
                    ChartBuilder::on(&root)
                        .caption(title, ("sans-serif", 20))
                        .margin(15)
                        .x_label_area_size(130)
                        .y_label_area_size(70)
                };
            }
            if log {
                draw!(builder!().build_cartesian_2d(0f64..n, (lo * 0.8..hi * 1.25).log_scale())?);
            } else {
                draw!(builder!().build_cartesian_2d(0f64..n, lo.min(0.0)..hi * 1.1)?);
            }
            root.present()?;
        }
        Ok(svg)
    }

    /// Figs. 5–7: each algorithm at its mean (`x`, `y`) relative to `baseline`, the
    /// non-dominated ones joined by a line; only `only` if given.
    pub fn pareto_svg(
        &self,
        baseline: &str,
        x: fn(&RelativeMeans) -> f64,
        y: fn(&RelativeMeans) -> f64,
        labels: (&str, &str),
        title: &str,
        only: Option<&[String]>,
    ) -> Result<String, ChartError> {
        let rel: Vec<RelativeMeans> = self
            .relative_to(baseline)
            .into_iter()
            .filter(|r| only.is_none_or(|o| o.contains(&r.algorithm)))
            .collect();
        let points: Vec<(f64, f64)> = rel.iter().map(|r| (x(r), y(r))).collect();
        let front = non_dominated(&points);
        let (x0, x1) = span(points.iter().map(|p| p.0));
        let (y0, y1) = span(points.iter().map(|p| p.1));
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (900, 650)).into_drawing_area();
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 20))
                .margin(20)
                .x_label_area_size(50)
                .y_label_area_size(60)
                .build_cartesian_2d(x0..x1, y0..y1)?;
            chart
                .configure_mesh()
                .x_desc(labels.0)
                .y_desc(labels.1)
                .draw()?;
            let mut line: Vec<(f64, f64)> = points
                .iter()
                .zip(&front)
                .filter(|(_, &f)| f)
                .map(|(p, _)| *p)
                .collect();
            line.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart.draw_series(LineSeries::new(line, RED.stroke_width(2)))?;
            for (r, (p, &f)) in rel.iter().zip(points.iter().zip(&front)) {
                let color = if f { RED } else { BLUE };
                chart.draw_series(std::iter::once(Circle::new(*p, 4, color.filled())))?;
                chart.draw_series(std::iter::once(Text::new(
                    r.algorithm.clone(),
                    *p,
                    ("sans-serif", 11).into_font(),
                )))?;
            }
            root.present()?;
        }
        Ok(svg)
    }

    /// Fig. 8: mean maximum stretch against the number of PTGs, one line per algorithm
    /// in `only` (all if None), on a logarithmic axis.
    pub fn by_count_svg(&self, only: Option<&[String]>, title: &str) -> Result<String, ChartError> {
        let means = self.mean_by_count(Metric::MaximumStretch);
        let rows: Vec<(&String, &Vec<f64>)> = self
            .algorithms
            .iter()
            .zip(&means)
            .filter(|(a, _)| only.is_none_or(|o| o.contains(a)))
            .collect();
        let values = rows
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .filter(|v| v.is_finite());
        let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let (lo, hi) = if lo.is_finite() && lo > 0.0 {
            (lo * 0.8, hi * 1.25)
        } else {
            (0.5, 2.0)
        };
        let x0 = *self.counts.first().unwrap_or(&0) as f64;
        let x1 = (*self.counts.last().unwrap_or(&1) as f64).max(x0 + 1.0);
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (900, 600)).into_drawing_area();
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 20))
                .margin(20)
                .x_label_area_size(50)
                .y_label_area_size(60)
                .build_cartesian_2d(x0..x1, (lo..hi).log_scale())?;
            chart
                .configure_mesh()
                .x_desc("number of concurrent PTGs")
                .y_desc("mean maximum stretch")
                .draw()?;
            for (k, (a, v)) in rows.iter().enumerate() {
                let color = GROUP_COLORS[k % GROUP_COLORS.len()];
                let pts: Vec<(f64, f64)> = self
                    .counts
                    .iter()
                    .map(|&n| n as f64)
                    .zip(v.iter().copied())
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                    .label(a.to_string())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 15, y)], color.stroke_width(2))
                    });
                chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()?;
            root.present()?;
        }
        Ok(svg)
    }
}

const GROUP_COLORS: [RGBColor; 7] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
];

/// The mean of `values` (NaN if empty).
fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        f64::NAN
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// A number with three significant-ish digits.
fn num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A padded axis range over `values`.
fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.1).max(0.02);
    (lo - pad, hi + pad * 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(
        scenario: usize,
        algorithm: &str,
        family: PtgFamily,
        n: usize,
        values: [f64; 4],
    ) -> RunRecord {
        RunRecord {
            scenario,
            family,
            ptg_count: n,
            cluster: if scenario.is_multiple_of(2) {
                "chti"
            } else {
                "gdx"
            }
            .into(),
            algorithm: algorithm.into(),
            average_stretch: values[0],
            makespan: values[1],
            maximum_stretch: values[2],
            minimum_stretch: values[3],
            utilization: 0.5,
            seconds: 0.01,
        }
    }

    fn sample() -> Vec<RunRecord> {
        let mut r = Vec::new();
        for s in 0..4 {
            let f = if s < 2 {
                PtgFamily::Random
            } else {
                PtgFamily::Fft
            };
            let n = 2 + 2 * (s % 2);
            r.push(record(s, "SELFISH", f, n, [2.0, 100.0, 10.0, 1.0]));
            r.push(record(s, "GOOD", f, n, [1.0, 110.0, 2.0, 0.9]));
            r.push(record(s, "BAD", f, n, [3.0, 120.0, 20.0, 1.0]));
        }
        r
    }

    #[test]
    fn five_numbers_interpolate() {
        let f = FiveNumbers::of(vec![4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!(
            (f.min, f.q1, f.median, f.q3, f.max),
            (1.0, 2.0, 3.0, 4.0, 5.0)
        );
        let g = FiveNumbers::of(vec![1.0, 2.0]).unwrap();
        assert_eq!(g.median, 1.5);
        assert!(FiveNumbers::of(vec![]).is_none());
    }

    #[test]
    fn the_non_dominated_are_found() {
        let nd = non_dominated(&[(1.0, 1.0), (2.0, 0.5), (2.0, 2.0), (1.0, 1.0)]);
        assert_eq!(nd, vec![true, true, false, true]);
    }

    #[test]
    fn relative_means_and_tables() {
        let recs = sample();
        let rep = PtgReport::new(&recs);
        assert_eq!(rep.algorithms, vec!["SELFISH", "GOOD", "BAD"]);
        assert_eq!(rep.counts, vec![2, 4]);
        let rel = rep.relative_to("SELFISH");
        assert_eq!(rel[1].average_stretch, 0.5);
        assert!((rel[2].makespan - 1.2).abs() < 1e-12);
        let t = rep.relative_table("SELFISH");
        assert!(
            t.contains("| GOOD | 1.100 | 0.500 | 0.200 | Fig. 5, 6, 7 |"),
            "{t}"
        );
        assert!(t.contains("| BAD |") && t.contains("| - |"));
        assert_eq!(rep.shorter_than_alone("GOOD"), 1.0);
        assert_eq!(rep.shorter_than_alone("SELFISH"), 0.0);
        assert!(rep
            .distribution_table(Metric::MaximumStretch)
            .contains("| GOOD | 2.00 |"));
        assert!(rep
            .utilization_table()
            .contains("| SELFISH | 50.00 | 50.00 |"));
        assert!(rep
            .by_count_table(Metric::MaximumStretch)
            .contains("| BAD | 20.00 | 20.00 |"));
        assert_eq!(rep.csv().lines().count(), 13);
    }

    #[test]
    fn the_charts_render() {
        let recs = sample();
        let rep = PtgReport::new(&recs);
        let b = rep
            .box_plot_svg(Metric::MaximumStretch, "Figure 4", true)
            .unwrap();
        assert!(b.starts_with("<svg") && b.contains("GOOD") && b.contains("random"));
        let p = rep
            .pareto_svg(
                "SELFISH",
                |r| r.makespan,
                |r| r.average_stretch,
                ("makespan", "stretch"),
                "Figure 5",
                None,
            )
            .unwrap();
        assert!(p.contains("BAD"));
        let c = rep.by_count_svg(None, "Figure 8").unwrap();
        assert!(c.contains("SELFISH"));
    }
}
