//! Layered configuration: embedded defaults < config file < `HETPILOT_*` environment <
//! command-line flags. With nothing configured the manager runs on the embedded default:
//! a data directory under the user's home, 127.0.0.1, and one `local` platform.

mod keys;
mod limits;
mod metrics;
pub mod provision;
mod quotas;
mod retention;
mod storage;

pub use limits::LimitsConfig;
pub use metrics::MetricsConfig;
pub use provision::{DirRetention, ProvisionConfig};
pub use quotas::Quotas;
pub use retention::RetentionConfig;
pub use storage::StorageConfig;

use crate::control::{FairshareConfig, SchedulerConfig};
use crate::source_ranges::{RangeError, SourceRanges};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use thiserror::Error;

fn default_listen() -> String {
    "127.0.0.1:8470".into()
}

fn default_lease_timeout_secs() -> f64 {
    30.0
}

fn default_heartbeats_per_second() -> u32 {
    1_000
}

fn default_platforms() -> Vec<PlatformConfig> {
    vec![PlatformConfig {
        name: "local".into(),
        description: "agents started on this machine".into(),
        profile: None,
        register_from: None,
    }]
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct PlatformConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The platform profile its pilots are provisioned with (relative paths are taken from
    /// the current directory). Without one, agents are started by hand.
    #[serde(default)]
    pub profile: Option<PathBuf>,
    /// The source address ranges (CIDR) its agents must register from, whatever token they
    /// hold (see `source_ranges`); from anywhere if unset.
    #[serde(default)]
    pub register_from: Option<Vec<String>>,
}

impl PlatformConfig {
    /// The ranges of `register_from`, if set.
    pub fn register_ranges(&self) -> Result<Option<SourceRanges>, RangeError> {
        self.register_from
            .as_deref()
            .map(SourceRanges::parse)
            .transpose()
    }
}

/// The manager's configuration file (`HETPILOT_CONFIG`, with `HETPILOT_*` overrides), as
/// read. Names follow one rule: a `…Config` is a section of this file as read; a
/// `…Settings` is what a component runs with, made from it (e.g. `ControlSettings`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ManagerConfig {
    /// Address the HTTP API listens on (`127.0.0.1:0` picks a free port).
    #[serde(default = "default_listen")]
    pub listen: String,
    /// Where the database, the admin token and agent work directories live.
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// An agent silent for this long is lost and its tasks go back to their queues.
    #[serde(default = "default_lease_timeout_secs")]
    pub lease_timeout_secs: f64,
    /// The most agent heartbeats per second the manager asks for: with more agents than
    /// one beat per quarter lease timeout allows, agents beat less often and the lease
    /// timeout grows to four of their intervals (see `queue::heartbeat_cadence`). At the
    /// default, 10,000 agents beat every 10 s, for a few percent of a core.
    #[serde(default = "default_heartbeats_per_second")]
    pub heartbeats_per_second: u32,
    /// The HTTPS certificate chain (PEM); with `tls_key`, the API is served over TLS.
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    /// The HTTPS certificate's private key (PEM).
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
    /// Allow plain HTTP on an address other than loopback (tokens would cross the network
    /// unencrypted).
    #[serde(default)]
    pub insecure_http: bool,
    /// Check the database at start with SQLite's full `integrity_check` (every index
    /// against its table too) rather than `quick_check`; slower on a large database.
    #[serde(default)]
    pub full_check: bool,
    /// Accept `hetpilot-agent --zero-work` agents, whose tasks end without running (for
    /// measuring the framework itself; never on a production manager).
    #[serde(default)]
    pub allow_zero_work: bool,
    /// What the HTTP API accepts (`[limits]`, see `config::limits`).
    #[serde(default)]
    pub limits: LimitsConfig,
    /// The platforms (`[[platforms]]`); by default one `local` platform.
    #[serde(default = "default_platforms")]
    pub platforms: Vec<PlatformConfig>,
    /// Live two-level scheduling (`[scheduler]`).
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    /// Live fairshare (`[fairshare]`).
    #[serde(default)]
    pub fairshare: FairshareConfig,
    /// Who may read `GET /metrics` (`[metrics]`, see `config::metrics`).
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// The URL pilots' agents reach the manager at (default: `http://` + the listen address).
    #[serde(default)]
    pub advertise_url: Option<String>,
    /// How the provisioner runs pilots on platforms that name a profile.
    #[serde(default)]
    pub provision: ProvisionConfig,
    /// File stores agents reach directly (`[[storage]]`, see `config::storage`).
    #[serde(default)]
    pub storage: Vec<StorageConfig>,
    /// How long a grant to a store lasts; agents holding tasks get fresh ones meanwhile.
    #[serde(default = "storage::default_grant_ttl_secs")]
    pub store_grant_ttl_secs: u64,
    /// Per-user quotas (`[quotas]`).
    #[serde(default)]
    pub quotas: Quotas,
    /// How long ended applications are kept (`[retention]`).
    #[serde(default)]
    pub retention: RetentionConfig,
    /// How long a registration token from `hetpilot token agent` lasts unless it says.
    #[serde(default = "quotas::default_agent_token_ttl_secs")]
    pub agent_token_ttl_secs: u64,
    /// The longest a registration token may be asked to last.
    #[serde(default = "quotas::default_agent_token_max_ttl_secs")]
    pub agent_token_max_ttl_secs: u64,
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("configuration field `{field}`: {problem}")]
    Invalid {
        field: &'static str,
        problem: String,
    },
    /// A problem in one entry of a list, e.g. `storage[1].url`.
    #[error("configuration field `{field}`: {problem}")]
    Entry { field: String, problem: String },
    /// The configuration file is unreadable, not TOML, or holds a wrong or unknown key.
    #[error("configuration file {}: {problem}", path.display())]
    File { path: PathBuf, problem: String },
}

/// The default data directory: `$XDG_DATA_HOME/hetpilot`, else `~/.local/share/hetpilot`.
pub fn default_data_dir() -> PathBuf {
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("hetpilot");
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/share/hetpilot"),
        None => PathBuf::from(".hetpilot"),
    }
}

impl ManagerConfig {
    /// Loads the layers; `overrides` are flag values as (key, value). The file must be
    /// TOML holding only keys the manager knows (see `config::keys`).
    pub fn load(
        file: Option<&Path>,
        overrides: &[(&str, String)],
    ) -> Result<ManagerConfig, ConfigError> {
        let mut builder = config::Config::builder();
        if let Some(file) = file {
            let text = std::fs::read_to_string(file).map_err(|e| ConfigError::File {
                path: file.to_path_buf(),
                problem: format!("cannot read it: {e}"),
            })?;
            keys::check_file(file, &text)?;
            builder = builder.add_source(config::File::from_str(&text, config::FileFormat::Toml));
        }
        builder = builder.add_source(
            config::Environment::with_prefix("HETPILOT")
                .prefix_separator("_")
                .separator("__")
                .try_parsing(true),
        );
        for (key, value) in overrides {
            builder = builder.set_override(*key, value.clone())?;
        }
        let settings: ManagerConfig = builder.build()?.try_deserialize()?;
        settings.check()?;
        Ok(settings)
    }

    fn check(&self) -> Result<(), ConfigError> {
        if !(self.lease_timeout_secs.is_finite() && self.lease_timeout_secs >= 0.2) {
            return Err(ConfigError::Invalid {
                field: "lease_timeout_secs",
                problem: format!(
                    "{} is too short (at least 0.2 seconds)",
                    self.lease_timeout_secs
                ),
            });
        }
        if self.heartbeats_per_second == 0 {
            return Err(ConfigError::Invalid {
                field: "heartbeats_per_second",
                problem: "must be at least 1".into(),
            });
        }
        if self.platforms.is_empty() {
            return Err(ConfigError::Invalid {
                field: "platforms",
                problem: "at least one platform is needed".into(),
            });
        }
        for (i, platform) in self.platforms.iter().enumerate() {
            platform.register_ranges().map_err(|e| ConfigError::Entry {
                field: format!("platforms[{i}].register_from"),
                problem: e.to_string(),
            })?;
        }
        self.scheduler
            .settings()
            .map_err(|e| ConfigError::Invalid {
                field: "scheduler",
                problem: e.to_string(),
            })?;
        if let Some(problem) = self.fairshare.problem() {
            return Err(ConfigError::Invalid {
                field: "fairshare",
                problem,
            });
        }
        if self.store_grant_ttl_secs < 60 {
            return Err(ConfigError::Invalid {
                field: "store_grant_ttl_secs",
                problem: format!("{} is too short (at least 60)", self.store_grant_ttl_secs),
            });
        }
        storage::check(&self.storage)
            .map_err(|(field, problem)| ConfigError::Entry { field, problem })?;
        if let Some((field, problem)) = self.quotas.problem() {
            return Err(ConfigError::Invalid { field, problem });
        }
        if let Some((field, problem)) = self.retention.problem() {
            return Err(ConfigError::Invalid { field, problem });
        }
        if self.agent_token_ttl_secs == 0
            || self.agent_token_ttl_secs > self.agent_token_max_ttl_secs
        {
            return Err(ConfigError::Invalid {
                field: "agent_token_ttl_secs",
                problem: format!(
                    "{} is not in 1-{} (agent_token_max_ttl_secs)",
                    self.agent_token_ttl_secs, self.agent_token_max_ttl_secs
                ),
            });
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(_), None) => {
                return Err(ConfigError::Invalid {
                    field: "tls_key",
                    problem: "tls_cert is set, so the key is needed too".into(),
                })
            }
            (None, Some(_)) => {
                return Err(ConfigError::Invalid {
                    field: "tls_cert",
                    problem: "tls_key is set, so the certificate is needed too".into(),
                })
            }
            _ => {}
        }
        if let Some((field, problem)) = self.limits.problem() {
            return Err(ConfigError::Invalid { field, problem });
        }
        Ok(())
    }

    pub fn lease_timeout_ms(&self) -> u64 {
        (self.lease_timeout_secs * 1000.0) as u64
    }

    pub fn platform(&self, name: &str) -> Option<&PlatformConfig> {
        self.platforms.iter().find(|p| p.name == name)
    }

    pub fn store(&self, name: &str) -> Option<&StorageConfig> {
        self.storage.iter().find(|s| s.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_then_file_then_flags() {
        let s = ManagerConfig::load(None, &[]).unwrap();
        assert_eq!(s.listen, "127.0.0.1:8470");
        assert_eq!(s.platforms[0].name, "local");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hetpilot.toml");
        std::fs::write(
            &file,
            "lease_timeout_secs = 5\n[[platforms]]\nname = \"gene\"\n",
        )
        .unwrap();
        let s = ManagerConfig::load(Some(&file), &[("listen", "127.0.0.1:0".into())]).unwrap();
        assert_eq!(s.lease_timeout_ms(), 5000);
        assert_eq!(s.platforms.len(), 1);
        assert_eq!(s.platforms[0].name, "gene");
        assert_eq!(s.listen, "127.0.0.1:0");
    }

    #[test]
    fn bad_values_name_the_field() {
        let err = ManagerConfig::load(None, &[("lease_timeout_secs", "0".into())]).unwrap_err();
        assert!(err.to_string().contains("lease_timeout_secs"), "{err}");
        for rate in ["0", "-1", "5000000000", "many"] {
            let err = ManagerConfig::load(None, &[("heartbeats_per_second", rate.into())])
                .unwrap_err()
                .to_string();
            assert!(err.contains("heartbeats_per_second"), "{rate}: {err}");
        }
        for days in ["0", "-1", "NaN", "inf", "1e9", "soon"] {
            let err = ManagerConfig::load(None, &[("retention.ended_app_days", days.into())])
                .unwrap_err()
                .to_string();
            assert!(err.contains("ended_app_days"), "{days}: {err}");
        }
        let s = ManagerConfig::load(None, &[("retention.ended_app_days", "7".into())]).unwrap();
        assert_eq!(s.retention.ended_app_age_ms(), 7 * 86_400_000);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, "listen = [1,2\n").unwrap();
        assert!(ManagerConfig::load(Some(&file), &[]).is_err());
    }

    #[test]
    fn pilot_dir_retention_is_bounded_and_a_bad_one_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hetpilot.toml");
        let load = |value: &str| {
            std::fs::write(
                &file,
                format!("[provision]\ninterval_secs = 1\npilot_dir_retention_secs = {value}\n"),
            )
            .unwrap();
            ManagerConfig::load(Some(&file), &[])
        };
        let retention = |s: ManagerConfig| s.provision.pilot_dir_retention_secs.after_ms();
        assert_eq!(retention(load("90").unwrap()), Some(90_000));
        assert_eq!(retention(load("0").unwrap()), None, "0 keeps them for ever");
        assert_eq!(
            retention(ManagerConfig::load(None, &[]).unwrap()),
            Some(86_400_000)
        );
        for bad in ["31536001", "-1", "\"1d\"", "1.5"] {
            let err = load(bad).unwrap_err().to_string();
            assert!(err.contains("hetpilot.toml"), "{bad}: {err}");
            assert!(err.contains("line 3"), "{bad}: {err}");
        }
        let err = load("99999999999").unwrap_err().to_string();
        assert!(err.contains("over a year"), "{err}");
    }

    #[test]
    fn register_from_ranges_load_and_a_malformed_one_names_its_platform_entry() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hetpilot.toml");
        let platforms = |second: &str| {
            format!(
                "[[platforms]]\nname = \"open\"\n\
                 [[platforms]]\nname = \"lab\"\nregister_from = {second}\n"
            )
        };
        std::fs::write(&file, platforms(r#"["10.1.0.0/16", "::ffff:127.0.0.1"]"#)).unwrap();
        let s = ManagerConfig::load(Some(&file), &[]).unwrap();
        assert_eq!(s.platform("open").unwrap().register_ranges().unwrap(), None);
        let lab = s
            .platform("lab")
            .unwrap()
            .register_ranges()
            .unwrap()
            .unwrap();
        assert!(lab.contains("10.1.9.9".parse().unwrap()));
        assert!(lab.contains("127.0.0.1".parse().unwrap()));
        assert!(!lab.contains("10.2.0.1".parse().unwrap()));
        for (bad, why) in [
            (
                r#"["10.1.0.0/16", "10.300.0.0/16"]"#,
                "`10.300.0.0/16` is not an address range",
            ),
            (r#"["10.1.2.3/16"]"#, "write 10.1.0.0/16"),
            ("[]", "leave it out to allow any source address"),
        ] {
            std::fs::write(&file, platforms(bad)).unwrap();
            let err = ManagerConfig::load(Some(&file), &[])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("`platforms[1].register_from`") && err.contains(why),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn storage_entries_load_from_the_file_and_are_checked() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("lustre.secret");
        std::fs::write(&secret, "0123456789abcdef0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let file = dir.path().join("hetpilot.toml");
        let entry = format!(
            "[[storage]]\nname = \"lustre\"\nurl = \"http://store1:8480\"\nsecret_file = {:?}\n",
            secret.display().to_string()
        );
        std::fs::write(&file, format!("{entry}io_mib_per_s = 800\n")).unwrap();
        let s = ManagerConfig::load(Some(&file), &[]).unwrap();
        assert_eq!(s.store_grant_ttl_secs, 24 * 3600);
        let lustre = s.store("lustre").unwrap();
        assert_eq!(
            (lustre.url.as_str(), lustre.io_mib_per_s),
            ("http://store1:8480", Some(800.0))
        );
        std::fs::write(&file, format!("{entry}{entry}")).unwrap();
        let err = ManagerConfig::load(Some(&file), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("storage[1].name") && err.contains("also named"),
            "{err}"
        );
    }
}
