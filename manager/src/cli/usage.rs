//! `hetpilot usage`: fairshare usage and priority per user (the admin sees every user, a
//! user only their own row).

use super::connect::Connect;
use super::output::{print_json, print_table};
use clap::Args as ClapArgs;

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let table = args.connect.client()?.usage().await?;
    if args.json {
        return print_json(&table);
    }
    let rows: Vec<Vec<String>> = table
        .iter()
        .map(|u| {
            vec![
                u.user.clone(),
                format!("{:.1}", u.usage),
                format!("{:.1}", u.decayed_usage),
                format!("{:.3}", u.priority),
            ]
        })
        .collect();
    print_table(&["USER", "USAGE", "DECAYED USAGE", "PRIORITY"], &rows);
    Ok(())
}
