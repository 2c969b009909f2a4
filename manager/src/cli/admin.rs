//! Admin commands: users, agent registration tokens, agents.

use super::agent_resources;
use super::connect::Connect;
use super::list_pages;
use super::onboarding;
use super::output::print_table;
use clap::{Args as ClapArgs, Subcommand};
use hetpilot::source_ranges::SourceRanges;
use hetpilot_protocol::protocol::{AgentInfo, AgentTokenInfo};

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user (or give an existing one a new token); prints, once, the lines that
    /// let them reach the manager: URL, TLS fingerprint (when it serves HTTPS) and token.
    Add {
        name: String,
        /// Write those lines to a new file only you can read (mode 0600), to hand over and
        /// source (`. FILE`), instead of printing them.
        #[arg(long, value_name = "PATH")]
        env_file: Option<std::path::PathBuf>,
        /// The URL the user reaches the manager at (default: the one this command used).
        #[arg(long, value_name = "URL")]
        public_url: Option<String>,
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
        /// Source address ranges agents may register from with this token, comma-separated
        /// CIDR blocks or addresses (e.g. `10.1.0.0/16,127.0.0.1`), on top of the platform's
        /// own `register_from`; default: from anywhere.
        #[arg(long, value_name = "RANGES", value_parser = SourceRanges::parse_list)]
        from: Option<SourceRanges>,
        #[command(flatten)]
        connect: Connect,
    },
    /// Registration tokens still valid: id, platform, who made them, when they expire.
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connect: Connect,
    },
    /// Revoke a registration token by its id (from `token list`); agents it registered keep
    /// running.
    Revoke {
        id: String,
        #[command(flatten)]
        connect: Connect,
    },
    /// Give the admin a new token; the old one stops working at once. On the manager's host
    /// the data directory's `admin.token` is rewritten.
    RotateAdmin {
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
    let UserCommand::Add {
        name,
        env_file,
        public_url,
        connect,
    } = cmd;
    let reached = connect.resolve()?;
    let client = hetpilot::client::Client::new(&reached.url, &reached.token, &reached.trust)?;
    let t = client.create_user(&name).await?;
    let url = public_url.unwrap_or_else(|| client.base().to_string());
    let lines = onboarding::env_lines(&name, &url, &t.token, &reached.trust);
    match env_file {
        Some(path) => {
            onboarding::write_env_file(&path, &lines)?;
            eprintln!(
                "wrote {} (mode 0600) for user `{name}`: give it to them; `. {}` sets \
                 HETPILOT_URL, HETPILOT_TOKEN and the TLS trust",
                path.display(),
                path.display()
            );
        }
        None => {
            print!("{lines}");
            eprintln!(
                "for user `{name}`, shown once: give them these lines to paste into a shell (or \
                 pass --env-file PATH to write them to a file)"
            );
        }
    }
    if onboarding::is_loopback(&url) {
        eprintln!(
            "note: {url} reaches the manager from this machine only; pass --public-url with \
             the address other machines use"
        );
    }
    Ok(())
}

pub async fn token(cmd: TokenCommand) -> anyhow::Result<()> {
    match cmd {
        TokenCommand::Agent {
            platform,
            ttl,
            from,
            connect,
        } => {
            let ttl = ttl
                .as_deref()
                .map(super::app_file::parse_duration_secs)
                .transpose()?;
            let from = from.as_ref().map(SourceRanges::to_strings);
            let t = connect.client()?.agent_token(&platform, ttl, from).await?;
            println!("{}", t.token);
            eprintln!(
                "agent registration token for platform `{platform}` (put it in a file only you \
                 can read and pass --token-file; see `hetpilot token list` for its expiry)"
            );
        }
        TokenCommand::List { json, connect } => {
            let client = connect.client()?;
            if json {
                let path = "/v1/agent-tokens";
                return list_pages::print_json::<AgentTokenInfo>(&client, path, |_| true).await;
            }
            let tokens: Vec<AgentTokenInfo> = list_pages::all(&client, "/v1/agent-tokens").await?;
            let now = hetpilot::service::now_ms();
            let rows: Vec<Vec<String>> = tokens
                .iter()
                .map(|t| {
                    vec![
                        t.id.clone(),
                        t.platform.clone(),
                        t.created_by.clone(),
                        super::output::age(now, t.created_at_ms),
                        super::output::millis(t.expires_at_ms.saturating_sub(now) as f64),
                        t.register_from
                            .as_ref()
                            .map_or_else(|| "anywhere".into(), |r| r.join(",")),
                    ]
                })
                .collect();
            print_table(
                &["ID", "PLATFORM", "BY", "CREATED", "EXPIRES IN", "FROM"],
                &rows,
            );
        }
        TokenCommand::Revoke { id, connect } => {
            let t = connect.client()?.revoke_agent_token(&id).await?;
            eprintln!(
                "revoked registration token {} (platform `{}`)",
                t.id, t.platform
            );
        }
        TokenCommand::RotateAdmin { connect } => {
            let t = connect.client()?.rotate_admin_token().await?;
            println!("{}", t.token);
            eprintln!("new admin token (shown once; the old one no longer works)");
        }
    }
    Ok(())
}

pub async fn agents(args: AgentsArgs) -> anyhow::Result<()> {
    let client = args.connect.client()?;
    if args.json {
        return list_pages::print_json::<AgentInfo>(&client, "/v1/agents", |_| true).await;
    }
    let agents: Vec<AgentInfo> = list_pages::all(&client, "/v1/agents").await?;
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
                a.reserved_slots.to_string(),
                agent_resources::gpus_cell(a),
                a.batch_job_id.clone().unwrap_or_default(),
                a.pilot.clone().unwrap_or_default(),
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
            "RESERVED",
            "GPUS",
            "BATCH JOB",
            "PILOT",
        ],
        &rows,
    );
    agent_resources::print(&agents);
    Ok(())
}
