//! `hetpilot pilots` (admin): every pilot with its platform, batch job, state, reason and
//! ages.

use super::connect::Connect;
use super::list_pages;
use super::output::{age, print_table};
use clap::Args as ClapArgs;
use hetpilot::service::now_ms;
use hetpilot_protocol::pilots::PilotRecord;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Also list pilots that ended, failed or were cancelled.
    #[arg(long, short)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let client = args.connect.client()?;
    let keep = |p: &PilotRecord| args.all || !p.state.is_final();
    if args.json {
        return list_pages::print_json(&client, "/v1/pilots", keep).await;
    }
    let mut pilots: Vec<PilotRecord> = list_pages::all(&client, "/v1/pilots").await?;
    pilots.retain(keep);
    let now = now_ms();
    let rows: Vec<Vec<String>> = pilots
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.platform.clone(),
                p.batch_job_id.clone().unwrap_or_else(|| "-".into()),
                p.state.as_str().to_string(),
                age(now, p.submitted_ms),
                p.registered_ms.map_or("-".into(), |t| age(now, t)),
                p.ended_ms.map_or("-".into(), |t| age(now, t)),
                p.agent.map_or("-".into(), |a| a.to_string()),
                p.user.clone().unwrap_or_else(|| "(shared)".into()),
                p.reason.clone(),
            ]
        })
        .collect();
    print_table(
        &[
            "PILOT",
            "PLATFORM",
            "BATCH JOB",
            "STATE",
            "SUBMITTED",
            "REGISTERED",
            "ENDED",
            "AGENT",
            "USER",
            "REASON",
        ],
        &rows,
    );
    if pilots.is_empty() {
        eprintln!(
            "no pilots{}",
            if args.all {
                ""
            } else {
                " (--all shows ended ones)"
            }
        );
    }
    Ok(())
}
