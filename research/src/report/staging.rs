//! The staging experiment's table and chart (`hetpilot-research simulate staging`): one row per
//! (setting, policy) with the median batch time, throughput, bytes moved and planning
//! time, and the throughput as grouped bars (the paper's Figs. 2, 3, 5 and 6).

use plotters::prelude::*;

use super::chart::ChartError;
use super::stats::Interval;

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
/// Without `timing` the planning-time column (wall clock, machine-dependent) is left out.
pub fn table(rows: &[StagingRow], timing: bool) -> String {
    let mut text = format!(
        "{:<10} {:<22} {:>12} {:>14} {:>10}",
        "setting", "algorithm", "batch (s)", "tasks/s", "GB moved"
    );
    text.push_str(if timing { " planning (s)\n" } else { "\n" });
    for r in rows {
        text.push_str(&format!(
            "{:<10} {:<22} {:>12.1} {:>14.3} {:>10.2}",
            r.setting, r.policy, r.makespan, r.throughput, r.gigabytes
        ));
        if timing {
            text.push_str(&format!(" {:>12.3}", r.planning_seconds));
        }
        text.push('\n');
    }
    text
}

/// The paper's base algorithms (Section 4), run as the paper describes them.
pub const BASE_ALGORITHMS: [&str; 4] = ["minmin", "maxmin", "sufferage", "sjf"];

/// One simulated run: a policy's throughput on one seed's workload in one setting.
#[derive(Debug, Clone)]
pub struct SeedRun {
    /// The swept value (`-` without a sweep).
    pub setting: String,
    /// The policy's name.
    pub policy: String,
    /// The workload seed.
    pub seed: u64,
    /// Tasks per second.
    pub throughput: f64,
}

/// Paired per-seed comparisons as a Markdown table: for each setting and each Het-HPS
/// variant present (`het-hps-paper`, the paper's; `het-hps`, ours), the throughput gain
/// (A / B − 1) over HPS, over the best and the mean of the paper's base algorithms on the
/// same seed, and over the best clairvoyant MCT planner when one ran; mean and 95 %
/// t-interval over the seeds.
pub fn comparisons(runs: &[SeedRun]) -> String {
    let mut settings: Vec<&str> = runs.iter().map(|r| r.setting.as_str()).collect();
    settings.dedup();
    let mut text = String::from(
        "| setting | algorithm | vs hps | vs best base | vs mean base | vs best clairvoyant | seeds |\n|---|---|---|---|---|---|---|\n",
    );
    for setting in settings {
        let of = |policy: &str| -> Vec<(u64, f64)> {
            runs.iter()
                .filter(|r| r.setting == setting && r.policy == policy)
                .map(|r| (r.seed, r.throughput))
                .collect()
        };
        let at = |policy: &str, seed: u64| of(policy).iter().find(|s| s.0 == seed).map(|s| s.1);
        let group = |names: &[&str], seed: u64, pick: fn(&[f64]) -> f64| {
            let v: Vec<f64> = names.iter().filter_map(|n| at(n, seed)).collect();
            (!v.is_empty()).then(|| pick(&v))
        };
        let best = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        for a in ["het-hps-paper", "het-hps"] {
            let own = of(a);
            if own.is_empty() {
                continue;
            }
            let gain = |other: &dyn Fn(u64) -> Option<f64>| {
                let v: Vec<f64> = own
                    .iter()
                    .filter_map(|&(s, t)| other(s).map(|o| t / o - 1.0))
                    .collect();
                if v.is_empty() {
                    "-".to_string()
                } else {
                    Interval::of(&v).percent()
                }
            };
            let clairvoyant = [
                "minmin-clairvoyant",
                "maxmin-clairvoyant",
                "sufferage-clairvoyant",
            ];
            text.push_str(&format!(
                "| {setting} | {a} | {} | {} | {} | {} | {} |\n",
                gain(&|s| at("hps", s)),
                gain(&|s| group(&BASE_ALGORITHMS, s, best)),
                gain(&|s| group(&BASE_ALGORITHMS, s, mean)),
                gain(&|s| group(&clairvoyant, s, best)),
                own.len()
            ));
        }
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
