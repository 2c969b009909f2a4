//! What `hetpilot user add` hands a new user: the manager's URL, the fingerprint of its
//! certificate when it serves HTTPS (or the CA file it was reached with) and their token,
//! as `export` lines ready to paste into a shell, or written to a small env file (mode
//! 0600, never over an existing file) they source.

use anyhow::Context;
use hetpilot_transport::tls::ClientTrust;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The `export` lines that let `user` reach the manager at `url` as the admin reached it.
pub fn env_lines(user: &str, url: &str, token: &str, trust: &ClientTrust) -> String {
    let export = |name: &str, value: &str| format!("export {name}={}\n", shell_words::quote(value));
    let mut text = format!("# hetpilot: {user} at {url}\n");
    text.push_str(&export("HETPILOT_URL", url));
    if url.starts_with("https://") {
        match (&trust.fingerprint, &trust.ca_file) {
            (Some(fp), _) => text.push_str(&export("HETPILOT_TLS_FINGERPRINT", fp.trim())),
            (None, Some(ca)) => {
                text.push_str("# copy this CA file to the user's machine, at the same path:\n");
                text.push_str(&export("HETPILOT_CA_FILE", &ca.to_string_lossy()));
            }
            (None, None) => {}
        }
    }
    text.push_str(&export("HETPILOT_TOKEN", token.trim()));
    text
}

/// Writes `text` to a new file at `path` only its owner can read.
pub fn write_env_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| {
            format!(
                "creating {} (an existing file is never replaced)",
                path.display()
            )
        })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// Whether `url` names this machine only, which no other machine reaches.
pub fn is_loopback(url: &str) -> bool {
    let host = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    matches!(host, "localhost" | "[::1]") || host.starts_with("127.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_exports_url_fingerprint_and_token_quoted() {
        let trust = ClientTrust {
            ca_file: None,
            fingerprint: Some("ab:cd\n".into()),
        };
        let text = env_lines("alice", "https://head:8470", "hpu_x'y", &trust);
        assert!(
            text.contains("export HETPILOT_URL=https://head:8470\n"),
            "{text}"
        );
        assert!(
            text.contains("export HETPILOT_TLS_FINGERPRINT=ab:cd\n"),
            "{text}"
        );
        assert!(
            text.contains("export HETPILOT_TOKEN='hpu_x'\\''y'\n"),
            "{text}"
        );
        let plain = env_lines("alice", "http://head:8470", "t", &trust);
        assert!(!plain.contains("FINGERPRINT"), "{plain}");
    }

    #[test]
    fn loopback_urls_are_told_apart() {
        assert!(is_loopback("https://127.0.0.1:8470"));
        assert!(is_loopback("http://localhost:1"));
        assert!(is_loopback("http://[::1]:1/"));
        assert!(!is_loopback("https://head.example.org:8470"));
        assert!(!is_loopback("https://10.0.0.1:8470"));
    }
}
