//! `hetpilot schedule [--watch]`: the live scheduler's current allocation (cores per
//! application per platform, with the runtimes it was based on, and for applications that
//! declare variants the variant each platform runs with its cores and GPUs); `--watch`
//! redraws it until Ctrl-C.

use super::connect::Connect;
use super::output::{print_json, print_table};
use clap::Args as ClapArgs;
use hetpilot_protocol::views::ScheduleView;
use std::io::IsTerminal;
use std::time::Duration;

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[arg(long)]
    pub json: bool,
    /// Redraw every --interval-secs until Ctrl-C.
    #[arg(long)]
    pub watch: bool,
    /// Seconds between redraws with --watch.
    #[arg(long, default_value_t = 2.0, value_parser = interval_secs)]
    pub interval_secs: f64,
    #[command(flatten)]
    pub connect: Connect,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let client = args.connect.client()?;
    let show = |view: &ScheduleView| {
        if args.json {
            print_json(view)
        } else {
            print_schedule(view);
            Ok(())
        }
    };
    if !args.watch {
        return show(&client.schedule().await?);
    }
    watch(Duration::from_secs_f64(args.interval_secs), || async {
        show(&client.schedule().await?)
    })
    .await
}

/// A redraw interval: 0.2 s to 1 hour.
pub fn interval_secs(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if (0.2..=3600.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} s: choose between 0.2 and 3600"))
    }
}

/// Runs `draw` every `interval` until Ctrl-C, clearing the screen first when stdout is a
/// terminal (a time line separates the draws otherwise). A failed draw ends the watch.
pub async fn watch<F, Fut>(interval: Duration, mut draw: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let terminal = std::io::stdout().is_terminal();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => return Ok(()),
            _ = tick.tick() => {}
        }
        if terminal {
            print!("\x1b[H\x1b[2J");
        }
        println!(
            "-- {} --",
            humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        );
        draw().await?;
        std::io::Write::flush(&mut std::io::stdout())?;
    }
}

/// The allocation as a table: one row per application, `cores (mean runtime)` per platform.
pub fn print_schedule(view: &ScheduleView) {
    if view.at_ms == 0 {
        println!("policy {}: no scheduling round has run yet", view.policy);
        return;
    }
    let platforms: Vec<String> = view
        .platforms
        .iter()
        .map(|p| {
            format!(
                "{} ({} agents, {} slots, speed {:.2})",
                p.name, p.agents, p.slots, p.speed
            )
        })
        .collect();
    println!(
        "policy {}; platforms: {}",
        view.policy,
        platforms.join(", ")
    );
    let mut header = vec![
        "APP".to_string(),
        "NAME".into(),
        "OWNER".into(),
        "WEIGHT".into(),
    ];
    header.extend(view.platforms.iter().map(|p| format!("CORES {}", p.name)));
    let tlpa = view.apps.iter().any(|a| a.placed_on.is_some());
    if tlpa {
        header.push("TLPA PLATFORM".into());
    }
    let rows: Vec<Vec<String>> = view
        .apps
        .iter()
        .map(|a| {
            let mut row = vec![
                a.app.to_string(),
                a.name.clone(),
                a.owner.clone(),
                format!("{:.3}", a.weight),
            ];
            row.extend(
                a.cores
                    .iter()
                    .zip(&a.runtime_s)
                    .zip(&a.samples)
                    .map(|((c, r), n)| format!("{c} ({r:.2} s, {n} runs)")),
            );
            if tlpa {
                row.push(a.placed_on.clone().unwrap_or_else(|| "-".into()));
            }
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    print_table(&header, &rows);
    print_variants(view);
}

/// The variant plan as a table, when an application declares variants: one row per
/// application, platform and variant, with the tasks, cores and GPUs it got there.
fn print_variants(view: &ScheduleView) {
    if view.variants.is_empty() {
        return;
    }
    println!("\nvariant plan:");
    let rows: Vec<Vec<String>> = view
        .variants
        .iter()
        .map(|v| {
            vec![
                v.app.to_string(),
                v.name.clone(),
                v.platform.clone(),
                v.variant.clone(),
                v.tasks.to_string(),
                v.cores.to_string(),
                format!("{}", v.gpus),
            ]
        })
        .collect();
    print_table(
        &[
            "APP", "NAME", "PLATFORM", "VARIANT", "TASKS", "CORES", "GPUS",
        ],
        &rows,
    );
}
