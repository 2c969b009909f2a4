//! SVG charts for the reports (Figs. 3, 5, 6, 7 style grouped bars) and the error the
//! other reports' charts fail with; rendered to strings with plotters so the caller
//! decides where they go.

use plotters::prelude::*;

/// A chart that plotters could not draw.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot draw the chart: {0}")]
pub struct ChartError(pub String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for ChartError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        ChartError(e.to_string())
    }
}

/// One bar series: a label and one value per group (NaN = no bar).
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) label: String,
    pub(crate) values: Vec<f64>,
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// A grouped bar chart: `groups` along x, one colored bar per series in each group.
pub(crate) fn grouped_bars(
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[Series],
) -> String {
    let mut svg = String::new();
    let values = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .filter(|v| v.is_finite());
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    // Non-negative data whose spread is small next to its level (fairness, normalized
    // makespan) gets a zoomed axis so the differences stay visible; otherwise start at 0.
    let (lo, hi) = if !lo.is_finite() {
        (0.0, 1.0)
    } else if lo > 0.0 && hi - lo < lo {
        ((lo - (hi - lo).max(hi * 0.02)).max(0.0), hi)
    } else {
        (lo.min(0.0), hi.max(lo + 1e-9))
    };
    let pad = (hi - lo) * 0.1;
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        // Drawing into a String cannot fail for I/O reasons; a failed draw leaves the
        // chart partial, which is visible, so the results are ignored on purpose.
        let _ = root.fill(&WHITE);
        let chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(60)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..groups.len().max(1) as f64, lo..hi + pad);
        let Ok(mut chart) = chart else {
            return svg_fallback(title);
        };
        let names = groups.to_vec();
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc(y_label)
            .x_labels(groups.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    names.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw();
        let k = series.len().max(1) as f64;
        let width = 0.8 / k;
        for (s, ser) in series.iter().enumerate() {
            let color = COLORS[s % COLORS.len()];
            let bars = ser
                .values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(move |(g, &v)| {
                    let x0 = g as f64 + 0.1 + s as f64 * width;
                    Rectangle::new([(x0, lo.max(0.0)), (x0 + width * 0.9, v)], color.filled())
                });
            if let Ok(ann) = chart.draw_series(bars) {
                ann.label(ser.label.clone()).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
            }
        }
        let _ = chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw();
        let _ = root.present();
    }
    svg
}

fn svg_fallback(title: &str) -> String {
    format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"60\"><text x=\"10\" y=\"30\">{title}: no data</text></svg>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_an_svg_with_the_labels() {
        let svg = grouped_bars(
            "Fairness",
            "fairness",
            &["Default".into(), "W/o Plat.".into()],
            &[Series {
                label: "rpa".into(),
                values: vec![0.8, f64::NAN],
            }],
        );
        assert!(svg.starts_with("<svg") && svg.contains("Fairness") && svg.contains("rpa"));
    }
}
