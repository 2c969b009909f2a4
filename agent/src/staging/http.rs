//! HTTP transfers: inputs from the manager's file service (with the agent's credential)
//! or from any HTTP(S) URL (without it: the credential never leaves for another host), and
//! outputs back to the file service.

use super::digest::Digesting;
use reqwest::StatusCode;
use std::path::Path;
use std::time::Duration;

/// Percent-encodes a file name for a URL path, keeping its `/` separators.
pub fn encode_path(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Downloads `url` into `dest`; returns the bytes written and their SHA-256.
pub async fn download(
    http: &reqwest::Client,
    url: &str,
    credential: Option<&str>,
    dest: &Path,
) -> Result<(u64, String), String> {
    let mut req = http.get(url).timeout(Duration::from_secs(3600));
    if let Some(token) = credential {
        req = req.bearer_auth(token);
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {e}"))?;
    match resp.status() {
        s if s.is_success() => {}
        StatusCode::NOT_FOUND => return Err(format!("not found at {url} (HTTP 404)")),
        s => {
            let body = resp.text().await.unwrap_or_default();
            return Err(format!("{url} answered {s}: {}", body.trim()));
        }
    }
    let mut out = Digesting::create(dest)
        .await
        .map_err(|e| crate::disk_full::cannot_write(dest, &e))?;
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("download from {url} broke off: {e}"))?
    {
        out.write(&chunk)
            .await
            .map_err(|e| crate::disk_full::cannot_write(dest, &e))?;
    }
    out.finish()
        .await
        .map_err(|e| crate::disk_full::cannot_write(dest, &e))
}

/// Uploads the file at `src` to `url` with `PUT`, streamed from disk; returns its size.
pub async fn upload(
    http: &reqwest::Client,
    url: &str,
    credential: &str,
    src: &Path,
) -> Result<u64, String> {
    let file = tokio::fs::File::open(src)
        .await
        .map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    let n = file
        .metadata()
        .await
        .map_err(|e| format!("cannot read {}: {e}", src.display()))?
        .len();
    let resp = http
        .put(url)
        .bearer_auth(credential)
        .timeout(Duration::from_secs(3600))
        .header(reqwest::header::CONTENT_LENGTH, n)
        .body(reqwest::Body::from(file))
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {e}"))?;
    if !resp.status().is_success() {
        let s = resp.status();
        let body = resp.text().await.unwrap_or_default();
        return Err(format!("{url} refused the upload ({s}): {}", body.trim()));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::encode_path;

    #[test]
    fn names_are_encoded_but_keep_their_directories() {
        assert_eq!(encode_path("db/q 1#2?.fa"), "db/q%201%232%3F.fa");
        assert_eq!(encode_path("é"), "%C3%A9");
    }
}
