//! The TLPA sweep's report (`hetpilot-research simulate alloc --reproduce`): `table.md` (Table II
//! beside ours, and the ATT of every cell), `improvement.svg` and `cost_per_decision.svg`,
//! rendered to strings from the runs of `crate::sim::alloc_sweep`.

use plotters::prelude::*;

use super::chart::ChartError;
use super::stats::Interval;
use crate::sim::alloc_sweep::{
    find, ImprovementTable, SweepRun, DEPTHS, HETEROGENEITIES, ORDERS, PAPER_TABLE_II,
};
use hetpilot_core::alloc::workload::SystemLoad;

/// `table.md`: our mean improvement (with its range over the cells) beside the paper's,
/// then the average turnaround time of every run.
pub fn table_markdown(runs: &[SweepRun], loads: &[SystemLoad], table: &ImprovementTable) -> String {
    let mut md = improvement_markdown(table);
    md.push_str(&ordering_markdown(runs, loads));
    md.push_str(&turnaround_markdown(runs, loads));
    md
}

/// The verdict on one Table II row, by rules fixed before the runs: `reproduced` when the
/// 95 % interval over the cells lies above zero and contains the paper's value; `gain
/// reproduced, size differs` when it lies above zero but misses the paper's value; `not
/// reproduced` when it reaches zero or below.
pub fn verdict(interval: &Interval, paper: f64) -> &'static str {
    if interval.low <= 0.0 {
        "not reproduced"
    } else if (interval.low..=interval.high).contains(&paper) {
        "reproduced"
    } else {
        "gain reproduced, size differs"
    }
}

/// Table II beside ours: one row per (order, baseline, depth), all 24, with the 95 %
/// t-interval over the SL x SH cells (their spread, not sampling error: the trace is
/// deterministic) and a verdict.
fn improvement_markdown(table: &ImprovementTable) -> String {
    let mut md = String::new();
    md.push_str("| order | vs | depth | ours: mean improvement (%) | 95 % interval over the SL x SH cells | min..max | paper (%) | verdict |\n|---|---|---|---|---|---|---|---|\n");
    let mut counts = [0usize; 3];
    for (scheduler, base, paper) in PAPER_TABLE_II {
        for (i, d) in DEPTHS.iter().enumerate() {
            let v = &table[&(scheduler, base, *d)];
            let ci = Interval::of(v);
            let (lo, hi) = v
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                    (a.min(*x), b.max(*x))
                });
            let verdict = verdict(&ci, paper[i]);
            counts[match verdict {
                "reproduced" => 0,
                "not reproduced" => 2,
                _ => 1,
            }] += 1;
            md.push_str(&format!(
                "| {} | {} | {} | {:.2} | {:.1} .. {:.1} | {:.1} .. {:.1} | {:.2} | {} |\n",
                scheduler.to_uppercase(),
                base.to_uppercase(),
                d,
                ci.mean,
                ci.low,
                ci.high,
                lo,
                hi,
                paper[i],
                verdict
            ));
        }
    }
    md.push_str(&format!(
        "\nVerdicts over the 24 combinations: {} reproduced, {} gain reproduced but size differs, {} not reproduced.\n",
        counts[0], counts[1], counts[2]
    ));
    md
}

/// BF against FF without TLPA: (ATT_FF − ATT_BF) / ATT_FF per cell (positive: BF better),
/// beside the ordering Table II implies, (1 − I_FF) / (1 − I_BF) − 1 from the improvements
/// I over each baseline (ATT_BF / ATT_FF = (1 − I_FF) / (1 − I_BF); mean over the depths).
fn ordering_markdown(runs: &[SweepRun], loads: &[SystemLoad]) -> String {
    let mut md = String::from(
        "\nBF against FF (positive: BF's average turnaround is shorter):\n\n| order | ours: mean (%) | 95 % interval over the cells | paper, implied by Table II (%) |\n|---|---|---|---|\n",
    );
    for scheduler in ORDERS {
        let mut v = Vec::new();
        for &load in loads {
            for sh in HETEROGENEITIES {
                let bf = find(runs, scheduler, load, sh, "bf", 0)
                    .metrics
                    .avg_turnaround;
                let ff = find(runs, scheduler, load, sh, "ff", 0)
                    .metrics
                    .avg_turnaround;
                v.push((ff - bf) / ff * 100.0);
            }
        }
        let ci = Interval::of(&v);
        let row = |base: &str| {
            PAPER_TABLE_II
                .iter()
                .find(|p| p.0 == scheduler && p.1 == base)
                .map(|p| p.2)
                .unwrap_or([0.0; 6])
        };
        let (bf, ff) = (row("bf"), row("ff"));
        let implied = bf
            .iter()
            .zip(ff)
            .map(|(b, f)| (1.0 - (1.0 - f / 100.0) / (1.0 - b / 100.0)) * 100.0)
            .sum::<f64>()
            / bf.len() as f64;
        md.push_str(&format!(
            "| {} | {:.2} | {:.1} .. {:.1} | {:.2} |\n",
            scheduler.to_uppercase(),
            ci.mean,
            ci.low,
            ci.high,
            implied
        ));
    }
    md
}

/// The average turnaround time of every run, one row per (order, SL, SH).
fn turnaround_markdown(runs: &[SweepRun], loads: &[SystemLoad]) -> String {
    let mut md = String::new();
    md.push_str("\nAverage turnaround time (s) per cell:\n\n| order | SL | SH | BF | FF |");
    for d in DEPTHS {
        md.push_str(&format!(" TLPA d={d} |"));
    }
    md.push_str("\n|---|---|---|---|---|");
    md.push_str(&"---|".repeat(DEPTHS.len()));
    md.push('\n');
    for scheduler in ORDERS {
        for &load in loads {
            for sh in HETEROGENEITIES {
                let att = |a: &str, d: usize| {
                    find(runs, scheduler, load, sh, a, d).metrics.avg_turnaround
                };
                md.push_str(&format!(
                    "| {} | {} | {} | {:.0} | {:.0} |",
                    scheduler.to_uppercase(),
                    load.label(),
                    sh,
                    att("bf", 0),
                    att("ff", 0)
                ));
                for d in DEPTHS {
                    md.push_str(&format!(" {:.0} |", att("tlpa", d)));
                }
                md.push('\n');
            }
        }
    }
    md
}

/// `improvement.svg`: our mean improvement against depth (solid) beside the paper's
/// (dashed), per order and baseline.
pub fn improvement_svg(table: &ImprovementTable) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let all = table
            .values()
            .flatten()
            .copied()
            .chain(PAPER_TABLE_II.iter().flat_map(|p| p.2));
        let (lo, hi) = all.fold((0.0f64, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "TLPA_BJS improvement in average turnaround (mean over SL x SH)",
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.8f64..7.2f64, (lo - 2.0).floor()..(hi + 2.0).ceil())?;
        chart
            .configure_mesh()
            .x_desc("simulation depth d")
            .y_desc("improvement (%)")
            .x_labels(6)
            .x_label_formatter(&|x| {
                let d = 2f64.powf(x.round());
                if (x - x.round()).abs() < 1e-6 {
                    format!("{d}")
                } else {
                    String::new()
                }
            })
            .draw()?;
        for (i, (scheduler, base, paper)) in PAPER_TABLE_II.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let ours: Vec<(f64, f64)> = DEPTHS
                .iter()
                .map(|&d| {
                    let v = &table[&(*scheduler, *base, d)];
                    ((d as f64).log2(), v.iter().sum::<f64>() / v.len() as f64)
                })
                .collect();
            chart
                .draw_series(LineSeries::new(ours.clone(), color.stroke_width(2)))?
                .label(format!(
                    "ours {} vs {}",
                    scheduler.to_uppercase(),
                    base.to_uppercase()
                ))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart.draw_series(ours.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            let theirs: Vec<(f64, f64)> = DEPTHS
                .iter()
                .zip(paper)
                .map(|(&d, &v)| ((d as f64).log2(), v))
                .collect();
            chart
                .draw_series(DashedLineSeries::new(theirs, 6, 4, color.stroke_width(1)))?
                .label(format!(
                    "paper {} vs {}",
                    scheduler.to_uppercase(),
                    base.to_uppercase()
                ))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(1))
                });
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

/// Microseconds per allocation decision of TLPA against depth, per order: the median over
/// the SL x SH cells of each depth (wall time of whole runs, so it includes the simulator's
/// own work). Points are (log2 depth, µs).
fn cost_points(runs: &[SweepRun]) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut points = Vec::new();
    for scheduler in ORDERS {
        let mut series = Vec::new();
        for d in DEPTHS {
            let mut costs: Vec<f64> = runs
                .iter()
                .filter(|r| r.scheduler == scheduler && r.allocator == "tlpa" && r.depth == d)
                .map(|r| r.seconds * 1e6 / r.metrics.decisions.max(1) as f64)
                .collect();
            costs.sort_by(f64::total_cmp);
            series.push(((d as f64).log2(), costs[costs.len() / 2]));
        }
        points.push((scheduler.to_uppercase(), series));
    }
    points
}

/// `cost_per_decision.svg`: TLPA's cost per allocation decision against depth.
pub fn cost_svg(runs: &[SweepRun]) -> Result<String, ChartError> {
    let points = cost_points(runs);
    let hi = points
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "TLPA_BJS cost per allocation decision (median over SL x SH)",
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.8f64..6.2f64, 0.0..hi * 1.15)?;
        chart
            .configure_mesh()
            .x_desc("simulation depth d")
            .y_desc("microseconds per decision")
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 {
                    format!("{}", 2f64.powf(x.round()))
                } else {
                    String::new()
                }
            })
            .draw()?;
        for (i, (name, series)) in points.into_iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(series.clone(), color.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart.draw_series(
                series
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )?;
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
