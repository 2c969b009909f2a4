//! `hetpilot bandwidths`: the transfer bandwidths the manager measured per platform and
//! storage endpoint, which Het-HPS staging plans with in place of the profiles' numbers.

use super::connect::Connect;
use super::list_pages;
use super::output::print_table;
use clap::Args as ClapArgs;
use hetpilot_protocol::views::BandwidthRow;

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
        return list_pages::print_json::<BandwidthRow>(&client, "/v1/bandwidths", |_| true).await;
    }
    let rows: Vec<BandwidthRow> = list_pages::all(&client, "/v1/bandwidths").await?;
    if rows.is_empty() {
        println!("no transfer measured yet (staging plans use the platform profiles' numbers)");
        return Ok(());
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.platform.clone(),
                r.endpoint.clone(),
                r.transfers.to_string(),
                format!("{:.1}", r.window_bytes as f64 / (1024.0 * 1024.0)),
                format!("{:.1}", r.mib_per_s),
            ]
        })
        .collect();
    print_table(
        &["PLATFORM", "ENDPOINT", "TRANSFERS", "WINDOW MIB", "MIB/S"],
        &table,
    );
    Ok(())
}
