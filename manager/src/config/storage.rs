//! `[[storage]]`: the file stores (depots: `hetpilot-agent serve-files`) agents fetch inputs from
//! and store outputs to directly, instead of through the manager. Each entry names a
//! store, the URL agents reach it at, and the secret file the manager signs its grants
//! with (the same secret the store verifies them with, see `hetpilot_transport::store_grant`).
//!
//! ```toml
//! store_grant_ttl_secs = 86400     # how long a grant lasts (running agents get fresh ones)
//! [[storage]]
//! name = "lustre"
//! url = "http://store1.example.org:8480"
//! secret_file = "/etc/hetpilot/lustre.secret"
//! io_mib_per_s = 800               # optional: the store's I/O bandwidth, for staging models
//! ```

use hetpilot_protocol::files::check_store_name;
use hetpilot_transport::store_grant::StoreSecret;
use serde::Deserialize;
use std::collections::HashSet;
use std::path::PathBuf;

/// One `[[storage]]` entry.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct StorageConfig {
    /// What `store://NAME/...` files name.
    pub name: String,
    /// The store's base URL as agents reach it, e.g. `http://store1:8480`.
    pub url: String,
    /// The secret shared with the store (at least 32 bytes, not world-readable).
    pub secret_file: PathBuf,
    /// The store's I/O bandwidth in MiB/s, if known.
    #[serde(default)]
    pub io_mib_per_s: Option<f64>,
}

/// A problem with one entry: the field it is in (`storage[1].url`) and what is wrong.
pub type EntryProblem = (String, String);

/// The default of `store_grant_ttl_secs`: a day.
pub fn default_grant_ttl_secs() -> u64 {
    24 * 3600
}

/// Checks every entry: names valid and distinct, URLs usable, bandwidths positive, and
/// secret files readable and strong.
pub fn check(stores: &[StorageConfig]) -> Result<(), EntryProblem> {
    let mut names = HashSet::new();
    for (i, s) in stores.iter().enumerate() {
        let field = |f: &str| format!("storage[{i}].{f}");
        check_store_name(&s.name).map_err(|p| (field("name"), p))?;
        if !names.insert(s.name.as_str()) {
            return Err((
                field("name"),
                format!("another store is also named `{}`", s.name),
            ));
        }
        check_url(&s.url).map_err(|p| (field("url"), p))?;
        if let Some(bw) = s.io_mib_per_s {
            if !(bw.is_finite() && bw > 0.0) {
                return Err((
                    field("io_mib_per_s"),
                    format!("{bw} is not a positive bandwidth"),
                ));
            }
        }
        StoreSecret::load(&s.secret_file).map_err(|e| (field("secret_file"), e.to_string()))?;
    }
    Ok(())
}

fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}`: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "`{url}`: a store is reached over http:// or https://"
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{url}` has no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!("`{url}`: a base URL has no query or fragment"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn secret(dir: &std::path::Path, content: &str, mode: u32) -> PathBuf {
        let path = dir.join(format!("secret-{mode:o}-{}", content.len()));
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn bad_entries_name_their_field() {
        let dir = tempfile::tempdir().unwrap();
        let good = StorageConfig {
            name: "lustre".into(),
            url: "http://127.0.0.1:8480".into(),
            secret_file: secret(dir.path(), &"k".repeat(40), 0o600),
            io_mib_per_s: Some(800.0),
        };
        assert_eq!(check(std::slice::from_ref(&good)), Ok(()));
        let cases = [
            (
                StorageConfig {
                    url: "ftp://h/".into(),
                    ..good.clone()
                },
                "storage[1].url",
            ),
            (
                StorageConfig {
                    url: "not a url".into(),
                    ..good.clone()
                },
                "storage[1].url",
            ),
            (
                StorageConfig {
                    io_mib_per_s: Some(0.0),
                    ..good.clone()
                },
                "storage[1].io_mib_per_s",
            ),
            (
                StorageConfig {
                    secret_file: secret(dir.path(), "short", 0o600),
                    ..good.clone()
                },
                "storage[1].secret_file",
            ),
            (
                StorageConfig {
                    secret_file: secret(dir.path(), &"k".repeat(40), 0o644),
                    ..good.clone()
                },
                "storage[1].secret_file",
            ),
            (
                StorageConfig {
                    name: "a/b".into(),
                    ..good.clone()
                },
                "storage[1].name",
            ),
        ];
        for (bad, field) in cases {
            let other = StorageConfig {
                name: if bad.name == "a/b" {
                    bad.name.clone()
                } else {
                    "gpfs".into()
                },
                ..bad
            };
            let (f, problem) = check(&[good.clone(), other]).unwrap_err();
            assert_eq!(f, field, "{problem}");
        }
        let (f, problem) = check(&[good.clone(), good]).unwrap_err();
        assert_eq!(f, "storage[1].name");
        assert!(problem.contains("also named"), "{problem}");
    }
}
