//! `hetpilot pilots` (admin): every pilot with its platform, batch job, state, reason,
//! ages, and its group: the nodes whose agents registered of those it asked for, and each
//! agent with its node.

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
                format!("{}/{}", p.members.len(), p.nodes),
                agents_cell(p),
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
            "NODES",
            "AGENTS",
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

/// A pilot's agents, each as `ID@NODE` (`ID` where its node was not recorded), or `-`.
fn agents_cell(p: &hetpilot_protocol::pilots::PilotRecord) -> String {
    if p.members.is_empty() {
        return p.agent.map_or("-".into(), |a| a.to_string());
    }
    p.members
        .iter()
        .map(|m| match m.hostname.as_str() {
            "" => m.agent.to_string(),
            host => format!("{}@{host}", m.agent),
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::agents_cell;
    use hetpilot_protocol::pilots::PilotRecord;

    #[test]
    fn a_groups_agents_show_with_their_nodes() {
        let mut p: PilotRecord = serde_json::from_value(serde_json::json!({
            "name": "lab-p1", "platform": "lab", "batch_job_id": "7", "state": "running",
            "reason": "", "submitted_ms": 0, "job_started_ms": null, "registered_ms": null,
            "ended_ms": null, "agent": 3, "walltime_end_ms": null
        }))
        .unwrap();
        assert_eq!(
            (p.nodes, agents_cell(&p)),
            (1, "3".to_string()),
            "an old record"
        );
        p.nodes = 2;
        p.members = serde_json::from_value(serde_json::json!([
            {"agent": 3, "hostname": "n2"}, {"agent": 4, "hostname": "n3"}
        ]))
        .unwrap();
        assert_eq!(agents_cell(&p), "3@n2,4@n3");
    }
}
