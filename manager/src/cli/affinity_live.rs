//! `hetpilot affinity --live [--watch]`: the running manager's online affinity profile:
//! Table 3 (throughput, EPA, RPA) and Table 4 (co-runner affinity) over the runtimes
//! measured so far, how many runs each cell rests on, the slowdowns measured on shared
//! GPUs, and the fairness of the last round's allocation. `--watch` redraws until Ctrl-C.

use super::affinity::render;
use super::connect::Connect;
use super::output::print_json;
use hetpilot::sched::AffinityTables;
use hetpilot_protocol::affinity_view::AffinityView;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct LiveArgs {
    /// Read the running manager's online profile instead of a profile file.
    #[arg(long)]
    pub live: bool,
    /// With --live: redraw every --interval-secs until Ctrl-C.
    #[arg(long, requires = "live")]
    pub watch: bool,
    /// Seconds between redraws with --watch.
    #[arg(long, default_value_t = 2.0, value_parser = super::schedule::interval_secs)]
    pub interval_secs: f64,
    #[command(flatten)]
    pub connect: Connect,
}

pub async fn run(args: LiveArgs, json: bool) -> anyhow::Result<()> {
    let client = args.connect.client()?;
    let show = |view: &AffinityView| -> anyhow::Result<()> {
        if json {
            print_json(view)
        } else {
            print!("{}", render_live(view));
            Ok(())
        }
    };
    if !args.watch {
        return show(&client.affinity().await?);
    }
    super::schedule::watch(Duration::from_secs_f64(args.interval_secs), || async {
        show(&client.affinity().await?)
    })
    .await
}

/// Tables 3 and 4 with the applications named by id and name, then the sample counts.
pub fn render_live(view: &AffinityView) -> String {
    if view.apps.is_empty() || view.platforms.is_empty() {
        return "no unfinished application or no platform to profile yet\n".into();
    }
    let tables = AffinityTables {
        applications: view
            .apps
            .iter()
            .map(|a| format!("{} {}", a.app, a.name))
            .collect(),
        platforms: view.platforms.clone(),
        throughput: view.throughput.clone(),
        egocentric: view.egocentric.clone(),
        reciprocal: view.reciprocal.clone(),
        raw_difference: view.raw_difference.clone(),
        normalized_difference: view.normalized_difference.clone(),
    };
    let mut out = render(&tables);
    out.push_str("\nSuccessful runs measured (0: the cell is the prior, not a measurement)\n");
    let width = tables
        .applications
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .max(11);
    out.push_str(&format!("{:width$}", "Application"));
    for p in &view.platforms {
        out.push_str(&format!(" {p:>9}"));
    }
    out.push('\n');
    for (name, row) in tables.applications.iter().zip(&view.samples) {
        out.push_str(&format!("{name:width$}"));
        for n in row {
            out.push_str(&format!(" {n:>9}"));
        }
        out.push('\n');
    }
    out.push_str("\n95% confidence half-width of the mean runtime (- below two runs)\n");
    out.push_str(&format!("{:width$}", "Application"));
    for p in &view.platforms {
        out.push_str(&format!(" {p:>9}"));
    }
    out.push('\n');
    for (name, row) in tables.applications.iter().zip(&view.ci95) {
        out.push_str(&format!("{name:width$}"));
        for c in row {
            match c {
                Some(c) => out.push_str(&format!(" {:>8.1}%", 100.0 * c)),
                None => out.push_str(&format!(" {:>9}", "-")),
            }
        }
        out.push('\n');
    }
    out.push_str(&super::affinity_devices::render(view));
    match view.fairness {
        Some(f) => out.push_str(&format!(
            "\nfairness of the last round's allocation (1 - sigma/mu): {f:.3}\n"
        )),
        None => out.push_str("\nno scheduling round has allocated yet\n"),
    }
    out
}
