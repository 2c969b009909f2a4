//! Task output capture: a task's stdout and stderr are pipes the agent drains into files
//! created on the first byte, so tasks that print nothing cost no file system work, and
//! the last few KiB stay in memory for the report.

use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

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
    /// The file could not take more: its disk (or quota) is full.
    pub no_room: bool,
}

/// Drains `fd` (a non-blocking pipe) into `out` and the file `create()` makes (returning
/// it and its path, or why it could not) on the first byte, until end of file. Dropping
/// the future stops it (the task ended but something it started still holds the pipe
/// open); `out` keeps what was read.
pub async fn capture(
    fd: OwnedFd,
    create: impl FnOnce() -> Result<(File, PathBuf), String>,
    out: &mut Captured,
) {
    let mut rx = match pipe::Receiver::from_owned_fd_unchecked(fd) {
        Ok(rx) => rx,
        Err(e) => {
            out.error = Some(format!("cannot read the task's output: {e}"));
            return;
        }
    };
    let mut create = Some(create);
    let mut file: Option<File> = None;
    // Most tasks print nothing or little: the large buffer comes with the first byte.
    let mut small = [0u8; 512];
    let mut big = Vec::new();
    loop {
        let buf = if big.is_empty() {
            &mut small[..]
        } else {
            &mut big[..]
        };
        let n = match rx.read(buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                out.error = Some(format!("reading the task's output: {e}"));
                break;
            }
        };
        let chunk = if big.is_empty() {
            &small[..n]
        } else {
            &big[..n]
        };
        out.bytes += n as u64;
        keep_tail(&mut out.tail, chunk);
        if out.error.is_none() {
            match create.take().map(|c| c()) {
                Some(Ok((f, path))) => {
                    file = Some(f);
                    out.path = Some(path);
                }
                Some(Err(why)) => out.error = Some(why),
                None => {}
            }
        }
        if let (Some(f), Some(path)) = (&mut file, &out.path) {
            if let Err(e) = f.write_all(chunk) {
                out.no_room = crate::disk_full::is_full(&e);
                out.error = Some(format!("writing {}: {e}", path.display()));
                file = None;
            }
        }
        if big.is_empty() {
            big = vec![0u8; 64 * 1024];
        }
    }
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

    fn pipe() -> (OwnedFd, File) {
        let (r, w) = crate::spawn::pipe().unwrap();
        (r, w.into())
    }

    /// Creates `path` (in an existing directory), as an output file is created.
    fn file_at(path: PathBuf) -> impl FnOnce() -> Result<(File, PathBuf), String> {
        move || {
            File::create(&path)
                .map(|f| (f, path))
                .map_err(|e| e.to_string())
        }
    }

    #[tokio::test]
    async fn files_appear_only_for_streams_that_write() {
        let dir = tempfile::tempdir().unwrap();
        let (quiet_r, quiet_w) = pipe();
        let (loud_r, mut loud_w) = pipe();
        // More than the pipe holds, from another thread: read in several chunks.
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let expected = big.clone();
        let writer = std::thread::spawn(move || loud_w.write_all(&big).unwrap());
        drop(quiet_w);
        let (mut quiet, mut loud) = (Captured::default(), Captured::default());
        tokio::join!(
            capture(quiet_r, file_at(dir.path().join("q")), &mut quiet),
            capture(loud_r, file_at(dir.path().join("l")), &mut loud),
        );
        writer.join().unwrap();
        assert!(quiet.path.is_none() && !dir.path().join("q").exists());
        assert_eq!(loud.bytes, expected.len() as u64);
        assert_eq!(loud.tail, expected[expected.len() - TAIL_BYTES..]);
        assert_eq!(std::fs::read(loud.path.unwrap()).unwrap(), expected);
        assert!(loud.error.is_none());
    }

    #[tokio::test]
    async fn a_pipe_held_open_elsewhere_keeps_what_was_read_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (r, mut w) = pipe();
        w.write_all(b"partial").unwrap();
        let mut got = Captured::default();
        let path = dir.path().join("out");
        let reading = capture(r, file_at(path.clone()), &mut got);
        // The writer stays open: capture never ends by itself.
        let ended = tokio::time::timeout(std::time::Duration::from_millis(200), reading).await;
        assert!(ended.is_err());
        assert_eq!(got.bytes, 7);
        assert_eq!(std::fs::read(&path).unwrap(), b"partial");
        drop(w);
    }

    /// A file that takes no more bytes (`/dev/full` answers every write with ENOSPC):
    /// the stream says its disk is full, and is drained to the end for its tail.
    #[tokio::test]
    async fn a_full_disk_is_told_apart_and_the_output_still_drained() {
        let (r, mut w) = pipe();
        let writer = std::thread::spawn(move || w.write_all(&vec![b'y'; 200_000]).unwrap());
        let mut got = Captured::default();
        let full = || {
            let path = PathBuf::from("/dev/full");
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            Ok((file, path))
        };
        capture(r, full, &mut got).await;
        writer.join().unwrap();
        assert!(got.no_room);
        let error = got.error.unwrap();
        assert!(error.contains("/dev/full"), "{error}");
        assert_eq!(got.bytes, 200_000);
        assert_eq!(got.tail, vec![b'y'; TAIL_BYTES]);
    }

    /// A directory planted at the output's name: the reason is reported and the tail kept.
    #[tokio::test]
    async fn an_uncreatable_file_is_an_error_and_the_tail_is_kept() {
        let work = tempfile::tempdir().unwrap();
        for d in ["runs", "cache/objects", "cache/tmp"] {
            std::fs::create_dir_all(work.path().join(d)).unwrap();
        }
        let rules = crate::output_dir::Rules::new(
            &work.path().join("runs"),
            &work.path().join("cache"),
            false,
        )
        .unwrap();
        let app = rules
            .open_app_dir(&work.path().join("out"), hetpilot_protocol::AppId(1))
            .unwrap();
        std::fs::create_dir(work.path().join("out/app-1/task-0.1.out")).unwrap();
        let (r, mut w) = pipe();
        w.write_all(b"oops").unwrap();
        drop(w);
        let mut got = Captured::default();
        capture(r, || app.create("task-0.1.out"), &mut got).await;
        assert!(got.path.is_none());
        let error = got.error.unwrap();
        assert!(error.starts_with("cannot create"), "{error}");
        assert!(error.contains("a directory is in the way"), "{error}");
        assert_eq!(got.tail, b"oops");
    }
}
