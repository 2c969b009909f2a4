//! Sending finished runs' stdout and stderr to the manager when it asks (`send_output` in a
//! pull or heartbeat answer), so `hetpilot logs` on another machine can read them. The agent
//! remembers where the outputs of its last runs are (a bounded number); it sends only a
//! stream it wrote, opened without following a link and only if it is a regular file, and
//! of a long one only the last `max_bytes` the manager keeps (saying how many it left out).

use crate::api::Api;
use hetpilot_protocol::protocol::TaskAttempt;
use hetpilot_protocol::task_output::{OutputStream, OutputWanted};
use std::collections::{HashMap, VecDeque};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Runs whose output paths are remembered, at most (the oldest are forgotten first).
const REMEMBERED_RUNS: usize = 4096;

/// Where the outputs of the agent's last runs are.
#[derive(Clone, Default)]
pub struct KeptOutputs {
    runs: Arc<Mutex<Remembered>>,
}

#[derive(Default)]
struct Remembered {
    paths: HashMap<TaskAttempt, (Option<PathBuf>, Option<PathBuf>)>,
    order: VecDeque<TaskAttempt>,
}

impl KeptOutputs {
    /// Remembers that `run` wrote its stdout and stderr at these paths.
    pub fn record(&self, run: TaskAttempt, stdout: Option<PathBuf>, stderr: Option<PathBuf>) {
        if stdout.is_none() && stderr.is_none() {
            return;
        }
        let mut r = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if r.paths.insert(run, (stdout, stderr)).is_none() {
            r.order.push_back(run);
        }
        while r.order.len() > REMEMBERED_RUNS {
            if let Some(old) = r.order.pop_front() {
                r.paths.remove(&old);
            }
        }
    }

    fn path(&self, run: TaskAttempt, stream: OutputStream) -> Option<PathBuf> {
        let r = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let (out, err) = r.paths.get(&run)?;
        match stream {
            OutputStream::Stdout => out.clone(),
            OutputStream::Stderr => err.clone(),
        }
    }

    /// Sends each output asked for, in the background; a failure is logged (the reader
    /// is told by the manager that it did not come).
    pub fn send(&self, api: &Api, base: &str, wanted: Vec<OutputWanted>) {
        for w in wanted {
            let (api, kept) = (api.clone(), self.clone());
            let url = format!(
                "{base}/outputs/{}/{}/{}",
                w.run.task,
                w.run.attempt,
                w.stream.as_str()
            );
            tokio::spawn(async move {
                let Some(path) = kept.path(w.run, w.stream) else {
                    tracing::warn!(task = %w.run.task, attempt = w.run.attempt, "the manager asked for an output this agent does not remember");
                    return;
                };
                let sent = match open_tail(path.clone(), w.max_bytes).await {
                    Ok((file, len, skipped)) => api.put_output(&url, file, len, skipped).await,
                    Err(e) => Err(format!("cannot read {}: {e}", path.display())),
                };
                match sent {
                    Ok(()) => {
                        tracing::info!(task = %w.run.task, attempt = w.run.attempt, stream = w.stream.as_str(), "output sent to the manager")
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, task = %w.run.task, "cannot send an output to the manager")
                    }
                }
            });
        }
    }
}

/// Opens `path` (a regular file, no link followed at its name) positioned at its last
/// `max_bytes`: the file, the bytes from there, and the bytes before.
async fn open_tail(path: PathBuf, max_bytes: u64) -> std::io::Result<(tokio::fs::File, u64, u64)> {
    tokio::task::spawn_blocking(move || {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)?;
        let meta = file.metadata()?;
        if !meta.file_type().is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        let len = meta.len();
        let skipped = len.saturating_sub(max_bytes);
        file.seek(SeekFrom::Start(skipped))?;
        Ok((tokio::fs::File::from_std(file), len - skipped, skipped))
    })
    .await
    .map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::{AppId, TaskRef};

    fn run(index: u64) -> TaskAttempt {
        TaskAttempt {
            task: TaskRef {
                app: AppId(1),
                index,
            },
            attempt: 1,
        }
    }

    #[test]
    fn only_the_last_runs_are_remembered() {
        let kept = KeptOutputs::default();
        for i in 0..(REMEMBERED_RUNS as u64 + 10) {
            kept.record(run(i), Some(PathBuf::from(format!("o{i}"))), None);
        }
        assert_eq!(kept.path(run(0), OutputStream::Stdout), None);
        assert_eq!(
            kept.path(run(REMEMBERED_RUNS as u64 + 9), OutputStream::Stdout),
            Some(PathBuf::from(format!("o{}", REMEMBERED_RUNS + 9)))
        );
        assert_eq!(kept.path(run(20), OutputStream::Stderr), None);
        assert_eq!(kept.runs.lock().unwrap().paths.len(), REMEMBERED_RUNS);
    }

    #[tokio::test]
    async fn a_long_output_is_opened_at_its_last_bytes_and_a_link_is_refused() {
        use tokio::io::AsyncReadExt;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("task-0.1.out");
        std::fs::write(&out, "0123456789").unwrap();
        let (mut f, len, skipped) = open_tail(out.clone(), 4).await.unwrap();
        let mut text = String::new();
        f.read_to_string(&mut text).await.unwrap();
        assert_eq!((text.as_str(), len, skipped), ("6789", 4, 6));
        let (_, len, skipped) = open_tail(out.clone(), 100).await.unwrap();
        assert_eq!((len, skipped), (10, 0));
        let link = dir.path().join("task-1.1.out");
        std::os::unix::fs::symlink(&out, &link).unwrap();
        assert!(open_tail(link, 100).await.is_err());
    }
}
