//! Storing a run's declared outputs back after it succeeded: to the manager's file
//! service or a depot (under the application owner's files), or over SFTP. Every output is tried; the
//! problems are reported together.

use super::{add_transfer, http, sftp, store_url, Stager};
use hetpilot_protocol::files::{Source, StagingStats, TaskFile};
use hetpilot_protocol::AppId;
use std::path::{Path, PathBuf};
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
        let src = match inside(dir, &out.name) {
            Ok(src) => src,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
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

/// Where output `name` of the run directory `dir` really is, refused when the task made it
/// (or a directory above it) a link out of the run directory: the agent would store a file
/// of its own, or another user's, as this user's output.
fn inside(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    let (Ok(root), Ok(real)) = (dir.canonicalize(), path.canonicalize()) else {
        // Missing: reported as not written.
        return Ok(path);
    };
    if real.starts_with(&root) {
        Ok(real)
    } else {
        Err(format!(
            "output `{name}` is a link out of the run directory (to {}): not stored",
            real.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::inside;

    #[test]
    fn outputs_linked_out_of_the_run_dir_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let run = t.path().join("run");
        std::fs::create_dir_all(run.join("sub")).unwrap();
        std::fs::write(t.path().join("secret"), "x").unwrap();
        std::fs::write(run.join("sub/ok"), "y").unwrap();
        std::os::unix::fs::symlink(t.path().join("secret"), run.join("leak")).unwrap();
        std::os::unix::fs::symlink(t.path(), run.join("up")).unwrap();
        std::os::unix::fs::symlink(run.join("sub/ok"), run.join("alias")).unwrap();
        assert!(inside(&run, "leak").unwrap_err().contains("link out"));
        assert!(inside(&run, "up/secret").unwrap_err().contains("link out"));
        assert!(inside(&run, "sub/ok").is_ok());
        assert!(
            inside(&run, "alias").is_ok(),
            "a link inside the run dir is fine"
        );
        assert_eq!(inside(&run, "missing").unwrap(), run.join("missing"));
    }
}
