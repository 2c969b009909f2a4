//! Storing a run's declared outputs back after it succeeded: to the manager's file
//! service or a file store (under the application owner's files), or over SFTP. Every output is tried; the
//! problems are reported together.

use super::{add_transfer, http, sftp, store_url, Stager};
use hetpilot_shared::files::{Source, StagingStats, TaskFile};
use hetpilot_shared::AppId;
use std::path::Path;
use std::time::Instant;

/// Uploads `outputs` from the run directory `dir`; `None` when all were stored.
pub async fn store(
    stager: &Stager,
    app: AppId,
    owner: &str,
    dir: &Path,
    outputs: &[TaskFile],
    stats: &mut StagingStats,
) -> Option<String> {
    let mut problems = Vec::new();
    for out in outputs {
        let src = dir.join(&out.name);
        if !src.is_file() {
            problems.push(format!(
                "output `{}` was not written by the task (expected {})",
                out.name,
                src.display()
            ));
            continue;
        }
        let started = Instant::now();
        let sent = match &out.source {
            Source::Service(name) => {
                let url = format!(
                    "{}/v1/apps/{app}/files/{}",
                    stager.manager,
                    http::encode_path(name)
                );
                http::upload(&stager.http, &url, &stager.credential, &src).await
            }
            Source::Store { store, path } => match stager.grants.get(store, owner) {
                Err(e) => Err(e),
                Ok(grant) => {
                    let url = store_url(&grant, path);
                    http::upload(&stager.http, &url, &grant.token, &src)
                        .await
                        .map_err(|e| format!("store `{store}`: {e}"))
                }
            },
            Source::Sftp(url) => match stager.sftp_key.clone() {
                None => Err("an sftp:// output needs the agent's key (--sftp-key FILE)".into()),
                Some(key) => {
                    let url = url.clone();
                    tokio::task::spawn_blocking(move || sftp::upload(&url, &key, &src))
                        .await
                        .unwrap_or_else(|e| Err(format!("sftp transfer aborted: {e}")))
                }
            },
            other => Err(format!("`{other}` cannot receive outputs")),
        };
        match sent {
            Ok(n) => {
                stats.bytes_uploaded += n;
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                add_transfer(stats, out.source.endpoint(), n, ms);
            }
            Err(e) => problems.push(format!("output `{}`: {e}", out.name)),
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}
