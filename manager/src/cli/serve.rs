//! `hetpilot serve`: runs the manager until SIGINT or SIGTERM.

use super::connect::url_file;
use anyhow::Context;
use clap::Args as ClapArgs;
use hetpilot::config::Settings;
use hetpilot::service::{admin_token_path, Manager};
use std::path::PathBuf;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Configuration file (TOML); `HETPILOT_CONFIG` also works.
    #[arg(long, env = "HETPILOT_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on, e.g. 127.0.0.1:8470 (port 0 picks a free one).
    #[arg(long)]
    pub listen: Option<String>,
    /// Data directory (database, admin token).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Seconds of agent silence before its tasks go back to their queues.
    #[arg(long)]
    pub lease_timeout_secs: Option<f64>,
}

impl Args {
    pub fn settings(&self) -> anyhow::Result<Settings> {
        let mut overrides = Vec::new();
        if let Some(l) = &self.listen {
            overrides.push(("listen", l.clone()));
        }
        if let Some(d) = &self.data_dir {
            overrides.push(("data_dir", d.to_string_lossy().into_owned()));
        }
        if let Some(t) = self.lease_timeout_secs {
            overrides.push(("lease_timeout_secs", t.to_string()));
        }
        Ok(Settings::load(self.config.as_deref(), &overrides)?)
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let settings = args.settings()?;
    let data_dir = settings.data_dir.clone();
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (is another manager running?)",
                settings.listen
            )
        })?;
    let url = format!("http://{}", listener.local_addr()?);
    let advertise = settings
        .advertise_url
        .clone()
        .unwrap_or_else(|| url.clone());
    let profiles = hetpilot::provision::catalog::load_all(&settings)?;
    let provision = settings.provision.clone();
    let manager = Manager::open(settings)?;
    manager.use_profiles(&profiles);
    hetpilot::provision::provisioner::start(&manager, profiles, advertise, provision);
    std::fs::write(url_file(&data_dir), format!("{url}\n")).context("writing manager.url")?;
    println!("hetpilot manager listening on {url}");
    println!("data directory: {}", data_dir.display());
    println!("admin token:    {}", admin_token_path(&data_dir).display());
    hetpilot::server::serve(manager, listener, shutdown_signal()).await?;
    println!("manager stopped");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}
