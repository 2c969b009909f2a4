//! Task output capture: a task's stdout and stderr are pipes the agent drains into files
//! created on the first byte, so tasks that print nothing cost no file system work, and
//! the last few KiB stay in memory for the report.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio_util::sync::CancellationToken;

/// Bytes of output kept for the report.
pub const TAIL_BYTES: usize = 4096;

/// What one stream of a task wrote.
#[derive(Debug, Default)]
pub struct Captured {
    /// The file holding the output, if the task wrote any.
    pub path: Option<PathBuf>,
    pub bytes: u64,
    /// The last [`TAIL_BYTES`] bytes.
    pub tail: Vec<u8>,
    /// Why part of the output could not be kept.
    pub error: Option<String>,
}

/// Drains `fd` into `path` (created on the first byte) until end of file, or until `stop`
/// is cancelled (the task ended but something it started still holds the pipe open).
pub async fn capture(fd: OwnedFd, path: PathBuf, stop: CancellationToken) -> Captured {
    let mut out = Captured::default();
    let mut rx = match pipe::Receiver::from_owned_fd(fd) {
        Ok(rx) => rx,
        Err(e) => {
            out.error = Some(format!("cannot read the task's output: {e}"));
            return out;
        }
    };
    let mut file: Option<std::fs::File> = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = tokio::select! {
            r = rx.read(&mut buf) => match r {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    out.error = Some(format!("reading the task's output: {e}"));
                    break;
                }
            },
            _ = stop.cancelled() => break,
        };
        let chunk = &buf[..n];
        out.bytes += n as u64;
        keep_tail(&mut out.tail, chunk);
        if out.error.is_some() {
            continue;
        }
        if file.is_none() {
            let created = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|_| std::fs::File::create(&path));
            match created {
                Ok(f) => {
                    file = Some(f);
                    out.path = Some(path.clone());
                }
                Err(e) => out.error = Some(format!("cannot create {}: {e}", path.display())),
            }
        }
        if let Some(f) = &mut file {
            if let Err(e) = f.write_all(chunk) {
                out.error = Some(format!("writing {}: {e}", path.display()));
            }
        }
    }
    out
}

fn keep_tail(tail: &mut Vec<u8>, chunk: &[u8]) {
    tail.extend_from_slice(&chunk[chunk.len().saturating_sub(TAIL_BYTES)..]);
    if tail.len() > TAIL_BYTES {
        tail.drain(..tail.len() - TAIL_BYTES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes() {
        let mut tail = Vec::new();
        keep_tail(&mut tail, b"abc");
        keep_tail(&mut tail, &vec![b'x'; TAIL_BYTES]);
        keep_tail(&mut tail, b"end");
        assert_eq!(tail.len(), TAIL_BYTES);
        assert!(tail.ends_with(b"xend"));
    }

    #[tokio::test]
    async fn files_appear_only_for_streams_that_write() {
        let dir = tempfile::tempdir().unwrap();
        let (quiet_r, quiet_w) = std::io::pipe().unwrap();
        let (loud_r, mut loud_w) = std::io::pipe().unwrap();
        loud_w.write_all(b"hello\n").unwrap();
        drop((quiet_w, loud_w));
        let stop = CancellationToken::new();
        let quiet = capture(quiet_r.into(), dir.path().join("q/out"), stop.clone()).await;
        let loud = capture(loud_r.into(), dir.path().join("l/out"), stop).await;
        assert!(quiet.path.is_none() && !dir.path().join("q").exists());
        assert_eq!(loud.bytes, 6);
        assert_eq!(
            std::fs::read_to_string(loud.path.unwrap()).unwrap(),
            "hello\n"
        );
    }

    #[tokio::test]
    async fn a_pipe_held_open_elsewhere_stops_on_cancel() {
        let dir = tempfile::tempdir().unwrap();
        let (r, mut w) = std::io::pipe().unwrap();
        w.write_all(b"partial").unwrap();
        let stop = CancellationToken::new();
        let reading = tokio::spawn(capture(r.into(), dir.path().join("out"), stop.clone()));
        stop.cancel();
        let got = reading.await.unwrap();
        assert!(got.bytes <= 7);
        drop(w);
    }
}
