//! Ended pilots' directories (`<work_dir>/<pilot>/` on the platform) removed
//! `[provision] pilot_dir_retention_secs` after the pilot ended, so a platform's work
//! directory does not fill up. The end of each batch output file (`<pilot>.out`, `.err`:
//! the last [`KEPT_LOG_BYTES`]) is kept by the manager first (`DATA_DIR/pilot-logs/<pilot>/`);
//! a directory whose logs cannot be kept stays. The removal is recorded in the pilot's
//! record, so it happens once, also across restarts (the end time is stored too).
//!
//! Paths are built only from the profile's work directory and the manager's own pilot
//! names, checked again here, and passed as argument words (no shell).

use super::adapter::script::output_paths;
use super::adapter::{AdapterError, BatchJobId};
use super::host::PilotHost;
use super::profile::is_safe_name;
use super::provisioner::{pilot_spec, ManagedPlatform};
use crate::clock::now_ms;
use crate::config::ProvisionConfig;
use std::sync::Arc;

/// How much of the end of each batch output file is kept.
pub const KEPT_LOG_BYTES: u64 = 1 << 20;

/// At most this many directories are removed per provisioning cycle, so a long backlog
/// (e.g. after the retention was lowered) does not hold up the platform's loop.
const PER_CYCLE: usize = 8;

/// A batch output file's name and its last [`KEPT_LOG_BYTES`].
type Log = (String, String);

/// Removes the directories of `platform`'s pilots that ended more than the retention ago.
pub async fn clean<H: PilotHost>(
    m: &Arc<H>,
    platform: &Arc<ManagedPlatform>,
    settings: &ProvisionConfig,
) {
    let Some(after_ms) = settings.pilot_dir_retention_secs.after_ms() else {
        return;
    };
    let profile = &platform.profile;
    let due = m.ended_pilot_dirs(&profile.name, now_ms().saturating_sub(after_ms));
    for pilot in due.into_iter().take(PER_CYCLE) {
        if !is_safe_name(&pilot.name) {
            continue;
        }
        let job = pilot.batch_job_id.clone().map(BatchJobId);
        let p = platform.clone();
        let name = pilot.name.clone();
        let logs = tokio::task::spawn_blocking(move || fetch_logs(&p, job.as_ref(), &name)).await;
        let kept = match logs {
            Ok(Ok(logs)) => logs
                .iter()
                .try_for_each(|(file, text)| m.keep_pilot_log(&pilot.name, file, text.as_bytes()))
                .map_err(|e| format!("cannot keep its batch output: {e}")),
            Ok(Err(e)) => Err(format!("cannot read its batch output: {e}")),
            Err(e) => Err(format!("reading its batch output aborted: {e}")),
        };
        if let Err(reason) = kept {
            tracing::warn!(platform = %profile.name, pilot = %pilot.name, %reason, "pilot directory kept");
            continue;
        }
        let job = pilot.batch_job_id.clone().map(BatchJobId);
        let p = platform.clone();
        let name = pilot.name.clone();
        let removed =
            tokio::task::spawn_blocking(move || remove_dir(&p, job.as_ref(), &name)).await;
        match removed {
            Ok(Ok(dir)) => {
                tracing::info!(platform = %profile.name, pilot = %pilot.name, %dir, "ended pilot's directory removed; its batch output is kept in the data directory");
                let removed = crate::control::PilotEvent::DirRemoved {
                    pilot: pilot.name.clone(),
                };
                m.pilot_event(removed, now_ms());
            }
            Ok(Err(e)) => {
                tracing::warn!(platform = %profile.name, pilot = %pilot.name, error = %e, "cannot remove the ended pilot's directory; trying again later");
            }
            Err(e) => {
                tracing::warn!(platform = %profile.name, pilot = %pilot.name, error = %e, "removing the ended pilot's directory aborted");
            }
        }
    }
}

/// The ends of pilot `name`'s batch output files that exist (a pilot that never started
/// has none).
fn fetch_logs(
    p: &ManagedPlatform,
    job: Option<&BatchJobId>,
    name: &str,
) -> Result<Vec<Log>, AdapterError> {
    let spec = pilot_spec(&p.profile, "", name);
    let (out, err) = output_paths(&spec);
    let bytes = KEPT_LOG_BYTES.to_string();
    let mut logs = Vec::new();
    for (path, file) in [(out, format!("{name}.out")), (err, format!("{name}.err"))] {
        let argv = ["tail", "-c", &bytes, "--", &path];
        let got = p
            .adapter
            .run_beside(p.runner.as_ref(), &p.profile, job, &argv)?;
        if got.status == 0 {
            logs.push((file, got.stdout));
        }
    }
    Ok(logs)
}

/// Removes pilot `name`'s directory; returns its path.
fn remove_dir(
    p: &ManagedPlatform,
    job: Option<&BatchJobId>,
    name: &str,
) -> Result<String, AdapterError> {
    let dir = pilot_spec(&p.profile, "", name).work_dir;
    let argv = ["rm", "-rf", "--", &dir];
    let out = p
        .adapter
        .run_beside(p.runner.as_ref(), &p.profile, job, &argv)?;
    if out.status != 0 {
        return Err(AdapterError::Command {
            command: shell_words::join(argv),
            status: out.status,
            output: format!("{}{}", out.stdout, out.stderr).trim().to_string(),
        });
    }
    Ok(dir)
}
