//! `hetpilot usage`: fairshare usage and priority per user (the admin sees every user, a
//! user only their own row). The table lists the users served first (highest priority)
//! first; `--json` gives the pages as the API walks them, by user name.

use super::connect::Connect;
use super::list_pages;
use super::output::print_table;
use clap::Args as ClapArgs;
use hetpilot_protocol::views::UserUsage;

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let client = args.connect.client()?;
    if args.json {
        return list_pages::print_json::<UserUsage>(&client, "/v1/usage", |_| true).await;
    }
    let mut table: Vec<UserUsage> = list_pages::all(&client, "/v1/usage").await?;
    table.sort_by(|a, b| {
        b.priority
            .total_cmp(&a.priority)
            .then_with(|| a.user.cmp(&b.user))
    });
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
