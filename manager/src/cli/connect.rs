//! How CLI commands find the manager and their token. In order:
//!
//! - the URL: `--url`/`HETPILOT_URL`, else the `manager.url` the manager wrote in its data
//!   directory, else (with a configuration) its `listen` address;
//! - the token: `--token-file`/`HETPILOT_TOKEN_FILE`, `HETPILOT_TOKEN`, else the data
//!   directory's `admin.token`;
//! - the data directory: `--data-dir`/`HETPILOT_DATA_DIR`, else the configuration's
//!   `data_dir` (`--config FILE`/`HETPILOT_CONFIG`, the file `hetpilot serve` reads), else
//!   the default one;
//! - trust in an HTTPS manager: `--ca-file`/`HETPILOT_CA_FILE` or
//!   `--tls-fingerprint`/`HETPILOT_TLS_FINGERPRINT`, else (for the local manager) the
//!   fingerprint it wrote in its data directory, else that of the configured `tls_cert`.

use anyhow::{bail, Context};
use clap::Args as ClapArgs;
use hetpilot::client::Client;
use hetpilot::config::{default_data_dir, ManagerConfig};
use hetpilot::service::admin_token_path;
use hetpilot_transport::tls::{self, ClientTrust};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, ClapArgs)]
pub struct Connect {
    /// The manager's configuration file (TOML, as `hetpilot serve` reads it): its data
    /// directory, listen address and TLS settings lead to the manager and its admin token.
    #[arg(long, env = "HETPILOT_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Manager URL (default: the one the local manager wrote in its data directory).
    #[arg(long, env = "HETPILOT_URL", global = true)]
    pub url: Option<String>,
    /// File holding your token (default: `HETPILOT_TOKEN`, else the local admin token).
    #[arg(long, env = "HETPILOT_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// Data directory of the local manager (default: the configuration's `data_dir`).
    #[arg(long, env = "HETPILOT_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// PEM file of the CA (or self-signed certificate) the manager's certificate must chain to.
    #[arg(long, env = "HETPILOT_CA_FILE", global = true)]
    pub ca_file: Option<PathBuf>,
    /// SHA-256 fingerprint of the manager's certificate to accept.
    #[arg(long, env = "HETPILOT_TLS_FINGERPRINT", global = true)]
    pub tls_fingerprint: Option<String>,
}

/// Where a command reaches the manager, as who, and how it trusts its certificate.
pub struct Resolved {
    pub url: String,
    pub token: String,
    pub trust: ClientTrust,
}

/// Where `hetpilot serve` records its certificate's fingerprint (when serving HTTPS).
pub fn fingerprint_file(data_dir: &Path) -> PathBuf {
    data_dir.join("tls.fingerprint")
}

/// Where `hetpilot serve` records the URL it listens on.
pub fn url_file(data_dir: &Path) -> PathBuf {
    data_dir.join("manager.url")
}

/// The URL a client on this machine reaches a manager listening on `listen` at (a wildcard
/// address is reached on loopback); `None` for a port picked at start (port 0).
fn url_of_listen(listen: &str, https: bool) -> Option<String> {
    let (host, port) = listen.rsplit_once(':')?;
    if port == "0" || port.is_empty() {
        return None;
    }
    let host = match host {
        "0.0.0.0" | "" => "127.0.0.1",
        "[::]" => "[::1]",
        h => h,
    };
    let scheme = if https { "https" } else { "http" };
    Some(format!("{scheme}://{host}:{port}"))
}

impl Connect {
    /// The manager's configuration, if one was named.
    pub fn settings(&self) -> anyhow::Result<Option<ManagerConfig>> {
        self.config
            .as_deref()
            .map(|file| {
                ManagerConfig::load(Some(file), &[])
                    .with_context(|| format!("reading the configuration {}", file.display()))
            })
            .transpose()
    }

    /// A client of the manager these options lead to.
    pub fn client(&self) -> anyhow::Result<Client> {
        let r = self.resolve()?;
        Client::new(&r.url, &r.token, &r.trust).context("setting up TLS")
    }

    /// The manager's URL, the token and the trust in its certificate these options lead to.
    pub fn resolve(&self) -> anyhow::Result<Resolved> {
        let settings = self.settings()?;
        let dir = self
            .data_dir
            .clone()
            .or_else(|| settings.as_ref().map(|s| s.data_dir.clone()))
            .unwrap_or_else(default_data_dir);
        let local_fingerprint = std::fs::read_to_string(fingerprint_file(&dir)).ok();
        let url = match &self.url {
            Some(u) => u.clone(),
            None => match std::fs::read_to_string(url_file(&dir)) {
                Ok(u) => u.trim().to_string(),
                Err(_) => settings
                    .as_ref()
                    .and_then(|s| {
                        let https = s.tls_cert.is_some() || local_fingerprint.is_some();
                        url_of_listen(&s.listen, https)
                    })
                    .with_context(|| {
                        format!(
                            "no manager URL: pass --url, set HETPILOT_URL, or name the manager's \
                             configuration with --config/HETPILOT_CONFIG (no local manager found \
                             in {})",
                            url_file(&dir).display()
                        )
                    })?,
            },
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
            trust.fingerprint = match (local_fingerprint, settings.and_then(|s| s.tls_cert)) {
                (Some(fp), _) => Some(fp),
                (None, Some(cert)) => Some(
                    tls::fingerprint_of(&cert)
                        .with_context(|| format!("reading tls_cert {}", cert.display()))?,
                ),
                (None, None) => None,
            };
        }
        Ok(Resolved { url, token, trust })
    }
}

#[cfg(test)]
mod tests {
    use super::url_of_listen;

    #[test]
    fn a_listen_address_becomes_a_url_reachable_from_this_machine() {
        assert_eq!(
            url_of_listen("127.0.0.1:8470", false).as_deref(),
            Some("http://127.0.0.1:8470")
        );
        assert_eq!(
            url_of_listen("0.0.0.0:8470", true).as_deref(),
            Some("https://127.0.0.1:8470")
        );
        assert_eq!(
            url_of_listen("[::]:9000", false).as_deref(),
            Some("http://[::1]:9000")
        );
        assert_eq!(
            url_of_listen("head.example.org:8470", true).as_deref(),
            Some("https://head.example.org:8470")
        );
        assert_eq!(url_of_listen("127.0.0.1:0", false), None);
        assert_eq!(url_of_listen("nonsense", false), None);
    }
}
