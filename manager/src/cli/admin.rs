//! Admin commands: users, agent registration tokens, agents.

use super::connect::Connect;
use super::output::{print_json, print_table};
use clap::{Args as ClapArgs, Subcommand};

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user (or give an existing one a new token); prints the token once.
    Add {
        name: String,
        #[command(flatten)]
        connect: Connect,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// A registration token for agents of one platform; prints it once.
    Agent {
        #[arg(long, default_value = "local")]
        platform: String,
        /// Lifetime, like 12h or 7d.
        #[arg(long)]
        ttl: Option<String>,
        #[command(flatten)]
        connect: Connect,
    },
}

#[derive(Debug, ClapArgs)]
pub struct AgentsArgs {
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: Connect,
}

pub async fn user(cmd: UserCommand) -> anyhow::Result<()> {
    let UserCommand::Add { name, connect } = cmd;
    let t = connect.client()?.create_user(&name).await?;
    println!("{}", t.token);
    eprintln!("token for user `{name}` (shown once; give it to them as HETPILOT_TOKEN)");
    Ok(())
}

pub async fn token(cmd: TokenCommand) -> anyhow::Result<()> {
    let TokenCommand::Agent {
        platform,
        ttl,
        connect,
    } = cmd;
    let ttl = ttl
        .as_deref()
        .map(super::app_file::parse_duration_secs)
        .transpose()?;
    let t = connect.client()?.agent_token(&platform, ttl).await?;
    println!("{}", t.token);
    eprintln!("agent registration token for platform `{platform}` (pass it in HETPILOT_AGENT_TOKEN or --token-file)");
    Ok(())
}

pub async fn agents(args: AgentsArgs) -> anyhow::Result<()> {
    let agents = args.connect.client()?.agents().await?;
    if args.json {
        return print_json(&agents);
    }
    let rows: Vec<Vec<String>> = agents
        .iter()
        .map(|a| {
            vec![
                a.agent.to_string(),
                a.platform.clone(),
                a.hostname.clone(),
                a.slots.to_string(),
                a.state.clone(),
                a.tasks_held.to_string(),
                a.batch_job_id.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print_table(
        &[
            "AGENT",
            "PLATFORM",
            "HOST",
            "SLOTS",
            "STATE",
            "HELD",
            "BATCH JOB",
        ],
        &rows,
    );
    Ok(())
}
