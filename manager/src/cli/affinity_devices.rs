//! The device co-runner section of `hetpilot affinity --live`: how each application's runs
//! holding a fraction of a GPU fared next to each set of device co-runners, and the
//! slowdown that set causes (runtime with it / runtime alone on a device).

use hetpilot_protocol::affinity_view::AffinityView;

/// The section, or nothing when no run held a fraction of a GPU.
pub fn render(view: &AffinityView) -> String {
    if view.device_slowdown.is_empty() {
        return String::new();
    }
    let name = |app| {
        view.apps
            .iter()
            .find(|a| a.app == app)
            .map_or_else(|| app.to_string(), |a| format!("{} {}", a.app, a.name))
    };
    let rows: Vec<[String; 6]> = view
        .device_slowdown
        .iter()
        .map(|d| {
            let set: Vec<String> = d.co_runners.iter().map(ToString::to_string).collect();
            [
                name(d.app),
                d.platform.clone(),
                if set.is_empty() {
                    "(alone)".into()
                } else {
                    set.join(",")
                },
                d.samples.to_string(),
                format!("{:.3}s", d.runtime_s),
                d.slowdown.map_or("-".into(), |s| format!("{s:.2}x")),
            ]
        })
        .collect();
    let header = [
        "Application",
        "Platform",
        "Device co-runners",
        "Runs",
        "Runtime",
        "Slowdown",
    ];
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = String::from(
        "\nShared GPUs: runtime next to the device co-runners and slowdown over the runtime \
         alone on a device (- not measured alone yet)\n",
    );
    out.push_str(&line(&header));
    for r in &rows {
        out.push_str(&line(&r.each_ref().map(String::as_str)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::affinity_view::{AffinityApp, DeviceSlowdown};
    use hetpilot_protocol::AppId;

    #[test]
    fn rows_name_the_set_and_the_slowdown() {
        let row = |app: u64, set: Vec<AppId>, slowdown: Option<f64>| DeviceSlowdown {
            app: AppId(app),
            platform: "gpu".into(),
            co_runners: set,
            runtime_s: 1.5,
            samples: 2,
            alone_s: slowdown.map(|s| 1.5 / s),
            slowdown,
        };
        let view = AffinityView {
            apps: vec![AffinityApp {
                app: AppId(1),
                name: "train".into(),
                owner: "u".into(),
            }],
            device_slowdown: vec![
                row(1, vec![], Some(1.0)),
                row(1, vec![AppId(2), AppId(3)], Some(1.5)),
                row(2, vec![AppId(1)], None),
            ],
            ..Default::default()
        };
        let text = render(&view);
        let lines: Vec<&str> = text.lines().skip(3).collect();
        assert!(
            lines[0].starts_with("1 train") && lines[0].ends_with("1.00x"),
            "{text}"
        );
        assert!(lines[0].contains("(alone)"), "{text}");
        assert!(
            lines[1].contains("2,3") && lines[1].ends_with("1.50x"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("2 ") && lines[2].ends_with('-'),
            "{text}"
        );
        assert_eq!(render(&AffinityView::default()), "");
    }
}
