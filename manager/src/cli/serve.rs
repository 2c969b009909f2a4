//! `hetpilot serve`: runs the manager until SIGINT or SIGTERM, over HTTPS when a
//! certificate is configured or `--tls self-signed` asks for one. Plain HTTP is allowed on
//! loopback addresses only, unless `--insecure-http` says otherwise.

use super::connect::{fingerprint_file, url_file};
use super::serve_platforms::{serve_reloads, ServedPlatforms};
use super::serve_tls::{self, PairOrigin};
use anyhow::{bail, Context};
use clap::Args as ClapArgs;
use hetpilot::config::ManagerConfig;
use hetpilot::data_dir_lock::DataDirLock;
use hetpilot::service::{admin_token_path, private_data_dir, Manager};
use hetpilot_transport::tls;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where `--tls` gets its certificate.
#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
pub enum TlsMode {
    /// Made in the data directory on first start (and reused); clients pin its fingerprint.
    SelfSigned,
}

#[derive(Debug, Clone, ClapArgs)]
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
    /// Serve HTTPS with a self-signed certificate (`tls_cert`/`tls_key` in the configuration
    /// serve one of your own).
    #[arg(long, value_enum)]
    pub tls: Option<TlsMode>,
    /// Allow plain HTTP on an address other than loopback (config `insecure_http = true`).
    #[arg(long)]
    pub insecure_http: bool,
    /// Check the database with SQLite's full `integrity_check` before serving (config
    /// `full_check = true`); without it, the quicker `quick_check` runs.
    #[arg(long)]
    pub full_check: bool,
    /// Journal every input of the control plane to FILE (one JSON object a line, mode
    /// 0600), for `hetpilot simulate live --replay FILE`. Costs a write per decision.
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
}

impl Args {
    pub fn settings(&self) -> anyhow::Result<ManagerConfig> {
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
        if self.insecure_http {
            overrides.push(("insecure_http", "true".into()));
        }
        if self.full_check {
            overrides.push(("full_check", "true".into()));
        }
        Ok(ManagerConfig::load(self.config.as_deref(), &overrides)?)
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let settings = args.settings()?;
    let data_dir = settings.data_dir.clone();
    private_data_dir(&data_dir)
        .with_context(|| format!("cannot use data directory {}", data_dir.display()))?;
    // Held until this process ends: no second manager, and no restore, on this directory.
    let _data_dir_lock = DataDirLock::acquire(&data_dir)?;
    let tls_wanted = args.tls.is_some() || settings.tls_cert.is_some();
    if let Ok(addr) = settings.listen.parse::<SocketAddr>() {
        // Refused before binding, so a refused address is never listened on.
        check_plain_http(addr, tls_wanted, settings.insecure_http)?;
    }
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (is another manager running?)",
                settings.listen
            )
        })?;
    let local = listener.local_addr()?;
    let (cert, origin) = match args.tls {
        Some(TlsMode::SelfSigned) => {
            let reused = data_dir.join(tls::SELF_SIGNED_CERT).exists();
            let origin = if reused {
                PairOrigin::SelfSignedReused
            } else {
                PairOrigin::SelfSignedNew
            };
            (Some(self_signed(&settings, local)?), origin)
        }
        None => (
            settings.tls_cert.clone().zip(settings.tls_key.clone()),
            PairOrigin::Configured,
        ),
    };
    check_plain_http(local, cert.is_some(), settings.insecure_http)?;
    let served_tls = match &cert {
        Some((cert, key)) => Some(serve_tls::load(cert, key, origin, &data_dir)?),
        None => None,
    };
    let scheme = if cert.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{local}");
    let advertise = settings
        .advertise_url
        .clone()
        .unwrap_or_else(|| url.clone());
    let profiles = hetpilot::provision::catalog::load_all(&settings)?;
    let (tls_config, fingerprint) = match served_tls {
        Some(served) => (Some(served.config), Some(served.fingerprint)),
        None => (None, None),
    };
    let mut provision = settings.provision.clone();
    provision.manager_tls_fingerprint = fingerprint.clone();
    let manager = Manager::open_journaled(settings, args.journal.as_deref())?;
    let cancel_on_shutdown = provision.cancel_on_shutdown;
    let platforms = Arc::new(tokio::sync::Mutex::new(ServedPlatforms::start(
        manager.clone(),
        args.clone(),
        profiles,
        advertise,
        provision,
    )));
    let reloads = serve_reloads(platforms.clone())?;
    match cert.as_ref().zip(fingerprint) {
        Some(((cert, _), fp)) => {
            std::fs::write(fingerprint_file(&data_dir), format!("{fp}\n"))
                .context("writing the TLS fingerprint")?;
            println!(
                "TLS certificate {} (SHA-256 fingerprint {fp})",
                cert.display()
            );
            tracing::info!(cert = %cert.display(), fingerprint = %fp, "serving HTTPS");
        }
        None => match std::fs::remove_file(fingerprint_file(&data_dir)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).context("removing the stale TLS fingerprint");
            }
            _ => {}
        },
    }
    std::fs::write(url_file(&data_dir), format!("{url}\n")).context("writing manager.url")?;
    println!("hetpilot manager listening on {url}");
    println!("data directory: {}", data_dir.display());
    println!("admin token:    {}", admin_token_path(&data_dir).display());
    hetpilot::server::serve(manager.clone(), listener, tls_config, shutdown_signal()).await?;
    // Taken between reloads, so none is cut short.
    let mut served = platforms.lock().await;
    reloads.abort();
    let cancelled = served.shutdown(cancel_on_shutdown).await;
    if cancel_on_shutdown && cancelled > 0 {
        println!("cancelled {cancelled} pilot(s)");
    }
    println!("manager stopped");
    Ok(())
}

/// Plain HTTP only on loopback addresses, unless `insecure_http`.
fn check_plain_http(addr: SocketAddr, tls: bool, insecure_http: bool) -> anyhow::Result<()> {
    if !tls && !addr.ip().is_loopback() && !insecure_http {
        bail!(
            "refusing to serve plain HTTP on {addr}, where tokens would cross the network \
             unencrypted: serve HTTPS (`--tls self-signed`, or `tls_cert` and `tls_key` in the \
             configuration) or pass --insecure-http (config `insecure_http = true`)"
        );
    }
    Ok(())
}

/// The self-signed certificate and key in the data directory, for localhost, 127.0.0.1,
/// the listen address and the advertised host.
fn self_signed(settings: &ManagerConfig, local: SocketAddr) -> anyhow::Result<(PathBuf, PathBuf)> {
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    if !local.ip().is_unspecified() {
        names.push(local.ip().to_string());
    }
    let listen_host = settings.listen.rsplit_once(':').map(|(h, _)| h);
    let advertised = settings
        .advertise_url
        .as_deref()
        .and_then(|u| u.split_once("://"))
        .and_then(|(_, rest)| rest.split(['/', ':']).next());
    for host in [listen_host, advertised].into_iter().flatten() {
        let host = host.trim_matches(['[', ']']);
        if !host.is_empty() && host != "0.0.0.0" && host != "::" && !names.iter().any(|n| n == host)
        {
            names.push(host.to_string());
        }
    }
    let dir: &Path = &settings.data_dir;
    // Made private from the start, as the manager makes it: the key goes in it.
    private_data_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(tls::self_signed(dir, &names)?)
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
