//! `hetpilot schedule`: the live scheduler's current allocation (cores per application
//! per platform, with the runtimes it was based on).

use super::connect::Connect;
use super::output::{print_json, print_table};
use clap::Args as ClapArgs;
use hetpilot_protocol::views::ScheduleView;

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let view = args.connect.client()?.schedule().await?;
    if args.json {
        return print_json(&view);
    }
    print_schedule(&view);
    Ok(())
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
}
