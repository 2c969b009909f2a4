//! The staging experiment's table and chart (`hetpilot simulate staging`): one row per
//! (setting, policy) with the median batch time, throughput, bytes moved and planning
//! time, and the throughput as grouped bars (the paper's Figs. 2, 3, 5 and 6).

use plotters::prelude::*;

use super::chart::ChartError;

/// Median outcome of one policy in one setting of a sweep.
#[derive(Debug, Clone)]
pub struct StagingRow {
    /// The swept value (`-` without a sweep).
    pub setting: String,
    /// The policy's name (`het-hps`, `minmin`, ...).
    pub policy: String,
    /// Batch execution time, seconds.
    pub makespan: f64,
    /// Tasks per second.
    pub throughput: f64,
    /// GB transferred.
    pub gigabytes: f64,
    /// Time the policy took to plan the batch, seconds.
    pub planning_seconds: f64,
}

/// The rows as a fixed-width text table, with its column header; every line ends in `\n`.
pub fn table(rows: &[StagingRow]) -> String {
    let mut text = format!(
        "{:<10} {:<14} {:>12} {:>14} {:>10} {:>12}\n",
        "setting", "algorithm", "batch (s)", "tasks/s", "GB moved", "planning (s)"
    );
    for r in rows {
        text.push_str(&format!(
            "{:<10} {:<14} {:>12.1} {:>14.3} {:>10.2} {:>12.3}\n",
            r.setting, r.policy, r.makespan, r.throughput, r.gigabytes, r.planning_seconds
        ));
    }
    text
}

/// Throughput as grouped bars: one group per setting (in the rows' order), one bar per
/// policy in `names`.
pub fn throughput_svg(
    title: &str,
    rows: &[StagingRow],
    names: &[String],
) -> Result<String, ChartError> {
    let settings: Vec<String> = {
        let mut s: Vec<String> = rows.iter().map(|r| r.setting.clone()).collect();
        s.dedup();
        s
    };
    let max = rows.iter().map(|r| r.throughput).fold(0.0, f64::max) * 1.15;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let groups = settings.len();
        let per = names.len() + 1;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..(groups * per) as f64, 0f64..max.max(1e-9))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("throughput (tasks/s)")
            .draw()?;
        for (g, s) in settings.iter().enumerate() {
            chart.draw_series(std::iter::once(Text::new(
                s.clone(),
                (
                    (g * per) as f64 + names.len() as f64 / 2.0 - 0.3,
                    max * 0.02,
                ),
                ("sans-serif", 14),
            )))?;
        }
        for (j, name) in names.iter().enumerate() {
            let color = Palette99::pick(j).to_rgba();
            let bars: Vec<Rectangle<(f64, f64)>> = rows
                .iter()
                .filter(|r| &r.policy == name)
                .map(|r| {
                    let g = settings.iter().position(|s| *s == r.setting).unwrap_or(0);
                    let x = (g * per + j) as f64;
                    Rectangle::new(
                        [
                            (x + 0.1, max * 0.06),
                            (x + 0.9, r.throughput.max(max * 0.06)),
                        ],
                        color.filled(),
                    )
                })
                .collect();
            chart
                .draw_series(bars)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}
