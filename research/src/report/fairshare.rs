//! The fairshare experiment's charts (`hetpilot-research simulate fairshare --out DIR`): empirical
//! CDFs (penalty increase, wait time, bounded slowdown: Figs. 4 left and 5) and the jobs'
//! requests by CPUs and RAM (Fig. 3), rendered to SVG strings.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::chart::ChartError;
use crate::sim::fairshare::{FairshareJob, PenaltyChange};

/// Empirical CDFs of sorted samples, one line per (label, samples); `log_x` plots from 1
/// upwards (smaller values at 1).
pub fn cdf_svg(
    title: &str,
    x_label: &str,
    series: &[(&str, Vec<f64>)],
    log_x: bool,
) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let hi = series
            .iter()
            .filter_map(|(_, v)| v.last().copied())
            .fold(1.0f64, f64::max);
        if log_x {
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(50)
                .build_cartesian_2d((1.0f64..hi * 1.5).log_scale(), 0.0f64..1.0)?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc("fraction of jobs")
                .draw()?;
            draw_cdfs(&mut chart, series, log_x)?;
        } else {
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(50)
                .build_cartesian_2d(0.0f64..hi * 1.05, 0.0f64..1.0)?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc("fraction of jobs")
                .draw()?;
            draw_cdfs(&mut chart, series, log_x)?;
        }
        root.present()?;
    }
    Ok(svg)
}

/// The CDF lines and their legend, on a linear or logarithmic x axis.
fn draw_cdfs<'a, X>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, RangedCoordf64>>,
    series: &[(&str, Vec<f64>)],
    log_x: bool,
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64>,
{
    for (i, (name, v)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(cdf_points(v, log_x), color.stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    Ok(())
}

/// Points of the empirical CDF of sorted `v` (at most ~2000); on a log axis values below 1
/// are drawn at 1.
fn cdf_points(v: &[f64], log_x: bool) -> Vec<(f64, f64)> {
    let n = v.len() as f64;
    let step = (v.len() / 2000).max(1);
    let mut pts: Vec<(f64, f64)> = v
        .iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0 || *i + 1 == v.len())
        .map(|(i, &x)| (if log_x { x.max(1.0) } else { x }, (i + 1) as f64 / n))
        .collect();
    if let Some(&(x, _)) = pts.first() {
        pts.insert(0, (x, 0.0));
    }
    pts
}

/// Fig. 3: jobs by CPUs and RAM requested, those with a higher penalty highlighted.
pub fn requests_scatter_svg(
    jobs: &[FairshareJob],
    changes: &[PenaltyChange],
) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let cpus_max = jobs
            .iter()
            .map(|j| j.request.total_cpus())
            .max()
            .unwrap_or(1) as f64;
        let ram_max = jobs
            .iter()
            .map(|j| gib(j.request.total_ram()))
            .fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Distinct job requests by CPUs and RAM (red: higher multi-resource penalty)",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (1.0f64..cpus_max * 1.2).log_scale(),
                (0.01f64..ram_max * 1.2).log_scale(),
            )?;
        chart
            .configure_mesh()
            .x_desc("requested CPUs (log)")
            .y_desc("requested RAM, GB (log)")
            .draw()?;
        // Many jobs share a request: draw each distinct (CPUs, RAM in MB) point once per class.
        let distinct = |increased: bool| -> std::collections::BTreeSet<(u64, u64)> {
            changes
                .iter()
                .filter(|c| c.increased() == increased)
                .map(|c| {
                    let r = &jobs[c.job].request;
                    (r.total_cpus().max(1), r.total_ram() >> 20)
                })
                .collect()
        };
        let at = |(cpus, mb): (u64, u64)| (cpus as f64, (mb as f64 / 1024.0).max(0.01));
        chart.draw_series(
            distinct(false)
                .into_iter()
                .map(|p| Cross::new(at(p), 3, BLUE.mix(0.4))),
        )?;
        chart.draw_series(
            distinct(true)
                .into_iter()
                .map(|p| Circle::new(at(p), 3, RED.filled())),
        )?;
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_points_start_at_zero_and_end_at_one() {
        let pts = cdf_points(&[0.5, 2.0, 3.0], true);
        assert_eq!(pts.first(), Some(&(1.0, 0.0)));
        assert_eq!(pts.last(), Some(&(3.0, 1.0)));
    }
}
