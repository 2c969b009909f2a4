//! How CLI commands find the manager and their token: `--url`/`HETPILOT_URL` and
//! `HETPILOT_TOKEN`/`--token-file`, else the local data directory's `manager.url` and
//! `admin.token` (what `hetpilot serve` writes there). An HTTPS manager is trusted through
//! `--ca-file`/`HETPILOT_CA_FILE` or `--tls-fingerprint`/`HETPILOT_TLS_FINGERPRINT`, else
//! (for the local manager) the fingerprint it wrote in its data directory.

use anyhow::{bail, Context};
use clap::Args as ClapArgs;
use hetpilot::client::Client;
use hetpilot::config::default_data_dir;
use hetpilot::service::admin_token_path;
use hetpilot_transport::tls::ClientTrust;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, ClapArgs)]
pub struct Connect {
    /// Manager URL (default: the one the local manager wrote in its data directory).
    #[arg(long, env = "HETPILOT_URL", global = true)]
    pub url: Option<String>,
    /// File holding your token (default: `HETPILOT_TOKEN`, else the local admin token).
    #[arg(long, env = "HETPILOT_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// Data directory of the local manager.
    #[arg(long, env = "HETPILOT_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// PEM file of the CA (or self-signed certificate) the manager's certificate must chain to.
    #[arg(long, env = "HETPILOT_CA_FILE", global = true)]
    pub ca_file: Option<PathBuf>,
    /// SHA-256 fingerprint of the manager's certificate to accept.
    #[arg(long, env = "HETPILOT_TLS_FINGERPRINT", global = true)]
    pub tls_fingerprint: Option<String>,
}

/// Where `hetpilot serve` records its certificate's fingerprint (when serving HTTPS).
pub fn fingerprint_file(data_dir: &Path) -> PathBuf {
    data_dir.join("tls.fingerprint")
}

/// Where `hetpilot serve` records the URL it listens on.
pub fn url_file(data_dir: &Path) -> PathBuf {
    data_dir.join("manager.url")
}

impl Connect {
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir.clone().unwrap_or_else(default_data_dir)
    }

    pub fn client(&self) -> anyhow::Result<Client> {
        let dir = self.data_dir();
        let url = match &self.url {
            Some(u) => u.clone(),
            None => {
                let f = url_file(&dir);
                std::fs::read_to_string(&f)
                    .with_context(|| {
                        format!("no manager URL: pass --url or set HETPILOT_URL (no local manager found in {})", f.display())
                    })?
                    .trim()
                    .to_string()
            }
        };
        let token = if let Some(f) = &self.token_file {
            std::fs::read_to_string(f)
                .with_context(|| format!("reading token file {}", f.display()))?
        } else if let Ok(t) = std::env::var("HETPILOT_TOKEN") {
            t
        } else {
            let f = admin_token_path(&dir);
            std::fs::read_to_string(&f).with_context(|| {
                format!(
                    "no token: set HETPILOT_TOKEN or pass --token-file (and {} is not readable)",
                    f.display()
                )
            })?
        };
        if token.trim().is_empty() {
            bail!("the token is empty");
        }
        let mut trust = ClientTrust {
            ca_file: self.ca_file.clone(),
            fingerprint: self.tls_fingerprint.clone(),
        };
        if self.url.is_none() && trust.ca_file.is_none() && trust.fingerprint.is_none() {
            trust.fingerprint = std::fs::read_to_string(fingerprint_file(&dir)).ok();
        }
        Client::new(&url, &token, &trust).context("setting up TLS")
    }
}
