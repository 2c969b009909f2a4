//! `[metrics]`: who may read the Prometheus exposition at `GET /metrics`, and how often
//! the manager samples the history the dashboard charts (`GET /v1/history`).

use serde::Deserialize;
use std::path::PathBuf;

/// `[metrics]`. Without `token_file`, only the admin token reads `/metrics`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// A file holding a read-only token for `/metrics` (Prometheus'
    /// `authorization.credentials_file`); it opens `/metrics` and nothing else.
    pub token_file: Option<PathBuf>,
    /// Milliseconds between two samples of the dashboard's history (default 10,000;
    /// kept within 100 ms..1 h). The manager keeps the last 720.
    pub history_interval_ms: Option<u64>,
}

impl MetricsConfig {
    /// How often the dashboard's history is sampled.
    pub fn history_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(
            self.history_interval_ms
                .unwrap_or(10_000)
                .clamp(100, 3_600_000),
        )
    }

    /// The metrics token, if one is configured (surrounding whitespace trimmed).
    pub fn read_token(&self) -> Result<Option<String>, String> {
        let Some(path) = &self.token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("`metrics.token_file` {}: {e}", path.display()))?;
        let token = text.trim();
        if token.len() < 16 {
            return Err(format!(
                "`metrics.token_file` {}: the token must be at least 16 characters",
                path.display()
            ));
        }
        Ok(Some(token.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_interval_is_bounded() {
        let at = |ms| MetricsConfig {
            history_interval_ms: ms,
            ..MetricsConfig::default()
        };
        assert_eq!(at(None).history_interval().as_millis(), 10_000);
        assert_eq!(at(Some(0)).history_interval().as_millis(), 100);
        assert_eq!(at(Some(u64::MAX)).history_interval().as_secs(), 3600);
    }

    #[test]
    fn tokens_are_read_trimmed_and_short_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        assert_eq!(MetricsConfig::default().read_token(), Ok(None));
        let config = MetricsConfig {
            token_file: Some(path.clone()),
            ..MetricsConfig::default()
        };
        assert!(config.read_token().unwrap_err().contains("token_file"));
        std::fs::write(&path, "short\n").unwrap();
        assert!(config.read_token().unwrap_err().contains("16 characters"));
        std::fs::write(&path, "  0123456789abcdef0123\n").unwrap();
        assert_eq!(
            config.read_token(),
            Ok(Some("0123456789abcdef0123".to_string()))
        );
    }
}
