//! A task's output fetched through the manager when the file the agent reported cannot be
//! read here (the CLI runs on another machine than the agent). Only the part the window
//! needs is fetched: for `--tail N` the output's end, with `Range` requests growing until
//! they hold N lines; for `--head N` its start; `--all` all of it. What arrives is
//! spooled to an anonymous temporary file, never held whole in memory.

use super::log_window::Window;
use hetpilot::client::Client;
use hetpilot_protocol::task_output::{OutputStream, SKIPPED_HEADER};
use hetpilot_protocol::TaskRef;
use std::io::{Read, Seek, SeekFrom, Write};

/// Bytes asked for first; each further request asks four times more.
const FIRST_PIECE: u64 = 64 * 1024;

/// The part of an output fetched, in a temporary file.
pub struct Fetched {
    pub file: std::fs::File,
    /// Where in the output the part starts.
    start: u64,
    /// The part's length.
    len: u64,
    /// The output's size as the manager keeps it.
    pub kept: u64,
    /// Bytes at its start the manager did not keep (the agent sent only the last ones).
    pub skipped: u64,
}

impl Fetched {
    fn is_whole(&self) -> bool {
        self.start == 0 && self.len >= self.kept
    }
}

/// Fetches what `window` shows of `stream` of run `attempt` of `task`.
pub async fn fetch(
    client: &Client,
    task: TaskRef,
    attempt: u32,
    stream: OutputStream,
    window: Window,
) -> anyhow::Result<Fetched> {
    let get = |range: Option<String>| fetch_range(client, task, attempt, stream, range);
    if window == Window::All {
        return get(None).await;
    }
    // The first piece: the start, which also tells the output's size.
    let mut piece = FIRST_PIECE;
    let mut fetched = get(Some(format!("bytes=0-{}", piece - 1))).await?;
    loop {
        let enough = fetched.is_whole()
            || match window {
                Window::Head(n) => newlines_before_last_byte(&fetched)? >= n,
                Window::Tail(n) => fetched.start > 0 && newlines_before_last_byte(&fetched)? >= n,
                Window::All => true,
            };
        if enough {
            return Ok(fetched);
        }
        piece = piece.saturating_mul(4);
        let range = match window {
            Window::Tail(_) => format!("bytes={}-", fetched.kept.saturating_sub(piece)),
            _ => format!("bytes=0-{}", piece - 1),
        };
        fetched = get(Some(range)).await?;
    }
}

/// One request, its body spooled to a temporary file. An empty output (nothing to send
/// of any range: 416) is an empty part.
async fn fetch_range(
    client: &Client,
    task: TaskRef,
    attempt: u32,
    stream: OutputStream,
    range: Option<String>,
) -> anyhow::Result<Fetched> {
    let mut file = tempfile::tempfile()?;
    let mut resp = match client
        .task_output(task, attempt, stream, range.as_deref())
        .await
    {
        Err(e) if e.status() == Some(416) => {
            return Ok(Fetched {
                file,
                start: 0,
                len: 0,
                kept: 0,
                skipped: 0,
            })
        }
        r => r?,
    };
    let skipped = resp
        .headers()
        .get(SKIPPED_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // `Content-Range: bytes A-B/LEN` when a part was sent; the whole output otherwise.
    let content_range = resp
        .headers()
        .get(reqwest::header::CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_content_range);
    while let Some(chunk) = resp.chunk().await? {
        file.write_all(&chunk)?;
    }
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(0))?;
    let (start, kept) = content_range.unwrap_or((0, len));
    Ok(Fetched {
        file,
        start,
        len,
        kept,
        skipped,
    })
}

/// `(start, total)` of a `Content-Range: bytes A-B/LEN` value.
fn parse_content_range(v: &str) -> Option<(u64, u64)> {
    let (span, total) = v.strip_prefix("bytes ")?.split_once('/')?;
    let (start, _) = span.split_once('-')?;
    Some((start.parse().ok()?, total.parse().ok()?))
}

/// Newlines in the fetched part, not counting one that is its last byte.
fn newlines_before_last_byte(f: &Fetched) -> std::io::Result<u64> {
    let mut file = &f.file;
    file.seek(SeekFrom::Start(0))?;
    let mut buf = vec![0u8; 64 * 1024];
    let (mut count, mut last) = (0u64, 0u8);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        count += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[n - 1];
    }
    file.seek(SeekFrom::Start(0))?;
    Ok(count - u64::from(last == b'\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_are_read_and_bad_ones_refused() {
        assert_eq!(parse_content_range("bytes 10-19/20"), Some((10, 20)));
        assert_eq!(parse_content_range("bytes 0-0/1"), Some((0, 1)));
        assert_eq!(parse_content_range("bytes */20"), None);
        assert_eq!(parse_content_range("items 1-2/3"), None);
        assert_eq!(parse_content_range("bytes 1-2/x"), None);
    }

    #[test]
    fn newlines_are_counted_without_a_final_one() {
        let fetched = |text: &str| {
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(text.as_bytes()).unwrap();
            Fetched {
                file,
                start: 1,
                len: text.len() as u64,
                kept: 0,
                skipped: 0,
            }
        };
        assert_eq!(newlines_before_last_byte(&fetched("a\nb\n")).unwrap(), 1);
        assert_eq!(newlines_before_last_byte(&fetched("a\nb")).unwrap(), 1);
        assert_eq!(newlines_before_last_byte(&fetched("")).unwrap(), 0);
    }
}
