//! `hetpilot app forget` and `hetpilot purge`: ended applications leave the manager's
//! memory and database, which frees room under `quotas.stored_tasks_per_user`.

use super::connect::Connect;
use super::output::print_json;
use clap::{Args as ClapArgs, Subcommand};
use hetpilot_protocol::AppId;
use std::time::Duration;

#[derive(Debug, Subcommand)]
pub enum AppCommand {
    /// Forget an ended (finished, failed or cancelled) application of yours: its tasks,
    /// runs and outputs' records are deleted. A running one is refused: cancel it first.
    Forget {
        app: AppId,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connect: Connect,
    },
}

#[derive(Debug, ClapArgs)]
pub struct PurgeArgs {
    /// Forget every application that ended at least this long ago, like 7d, 12h or 0s
    /// (every ended application).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub older_than: Duration,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

pub async fn app(cmd: AppCommand) -> anyhow::Result<()> {
    let AppCommand::Forget { app, json, connect } = cmd;
    let done = connect.client()?.forget(app).await?;
    if json {
        return print_json(&done);
    }
    println!("application {app} forgotten ({} tasks)", done.tasks);
    Ok(())
}

pub async fn purge(args: PurgeArgs) -> anyhow::Result<()> {
    let done = args
        .connect
        .client()?
        .purge(args.older_than.as_secs())
        .await?;
    if args.json {
        return print_json(&done);
    }
    println!(
        "{} applications forgotten ({} tasks)",
        done.apps, done.tasks
    );
    Ok(())
}
