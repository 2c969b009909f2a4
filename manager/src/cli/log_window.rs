//! The part of a task's output `hetpilot logs` shows: its first or last lines, or all of it,
//! read from a file in pieces (a 70 MB output is never held whole in memory) and made safe
//! for a terminal as it is written out.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};

/// Lines shown of each stream unless `--head`, `--tail` or `--all` says otherwise.
pub const DEFAULT_TAIL_LINES: u64 = 100;

/// The most bytes of one line handled at once (longer lines are written in pieces).
const MAX_LINE_PIECE: u64 = 64 * 1024;
/// Bytes read at a time when looking for the start of the last lines.
const BACKWARD_CHUNK: u64 = 64 * 1024;

/// Which lines to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The first N lines.
    Head(u64),
    /// The last N lines.
    Tail(u64),
    /// Everything.
    All,
}

/// What was shown of an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    /// Bytes of the output written.
    pub bytes: u64,
    /// The output's size in bytes.
    pub of: u64,
}

impl Shown {
    /// Whether part of the output was left out.
    pub fn cut(&self) -> bool {
        self.bytes < self.of
    }
}

/// Task output made safe for a terminal: control characters (escape sequences that could
/// rewrite the screen or the title) are shown escaped, newlines and tabs kept.
pub fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '\n' | '\t' => vec![c],
            c if c.is_control() => c.escape_default().collect(),
            c => vec![c],
        })
        .collect()
}

/// Writes the lines of `file` that `window` selects to `out`, made printable.
pub fn write_window(
    file: &mut (impl Read + Seek),
    window: Window,
    out: &mut impl Write,
) -> io::Result<Shown> {
    let size = file.seek(SeekFrom::End(0))?;
    let (start, lines) = match window {
        Window::Head(n) => (0, Some(n)),
        Window::Tail(n) => (start_of_last_lines(file, size, n)?, None),
        Window::All => (0, None),
    };
    file.seek(SeekFrom::Start(start))?;
    let mut reader = BufReader::new(file);
    let mut piece = Vec::new();
    let (mut written, mut lines_left) = (0u64, lines);
    while lines_left != Some(0) {
        piece.clear();
        let n = (&mut reader)
            .take(MAX_LINE_PIECE)
            .read_until(b'\n', &mut piece)?;
        if n == 0 {
            break;
        }
        written = written.saturating_add(n as u64);
        out.write_all(printable(&String::from_utf8_lossy(&piece)).as_bytes())?;
        if piece.ends_with(b"\n") {
            lines_left = lines_left.map(|l| l - 1);
        }
    }
    Ok(Shown {
        bytes: written,
        of: size,
    })
}

/// Where the last `n` lines of a file of `size` bytes begin (a last line without a final
/// newline counts as a line), read backwards in chunks.
fn start_of_last_lines(file: &mut (impl Read + Seek), size: u64, n: u64) -> io::Result<u64> {
    if n == 0 {
        return Ok(size);
    }
    let mut end = size;
    let mut newlines = 0u64;
    let mut chunk = vec![0u8; BACKWARD_CHUNK as usize];
    while end > 0 {
        let len = end.min(BACKWARD_CHUNK);
        let from = end - len;
        file.seek(SeekFrom::Start(from))?;
        let buf = &mut chunk[..len as usize];
        file.read_exact(buf)?;
        for (i, &b) in buf.iter().enumerate().rev() {
            let at = from + i as u64;
            // The newline that ends the file ends the last line; it does not start one.
            if b == b'\n' && at + 1 != size {
                newlines += 1;
                if newlines == n {
                    return Ok(at + 1);
                }
            }
        }
        end = from;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn window(text: &str, w: Window) -> (String, Shown) {
        let mut out = Vec::new();
        let shown = write_window(&mut Cursor::new(text.as_bytes()), w, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), shown)
    }

    #[test]
    fn head_tail_and_all_select_lines_and_say_what_was_cut() {
        let text = "one\ntwo\nthree\nfour\n";
        let size = text.len() as u64;
        assert_eq!(
            window(text, Window::Head(2)),
            ("one\ntwo\n".into(), Shown { bytes: 8, of: size })
        );
        assert_eq!(
            window(text, Window::Tail(2)),
            (
                "three\nfour\n".into(),
                Shown {
                    bytes: 11,
                    of: size
                }
            )
        );
        assert_eq!(window(text, Window::All).0, text);
        assert!(!window(text, Window::All).1.cut());
        assert!(!window(text, Window::Tail(4)).1.cut());
        assert!(!window(text, Window::Head(9)).1.cut());
        assert!(window(text, Window::Tail(3)).1.cut());
        assert_eq!(window(text, Window::Tail(0)).0, "");
        assert_eq!(window(text, Window::Head(0)).0, "");
    }

    #[test]
    fn a_last_line_without_a_newline_counts_and_empty_output_is_empty() {
        assert_eq!(window("a\nb\nc", Window::Tail(2)).0, "b\nc");
        assert_eq!(window("a\nb\nc", Window::Head(3)).0, "a\nb\nc");
        assert_eq!(window("", Window::Tail(5)).0, "");
        assert_eq!(window("\n\n", Window::Tail(1)).0, "\n");
    }

    #[test]
    fn the_last_lines_are_found_across_chunks() {
        let text: String = (0..40_000).map(|i| format!("line {i}\n")).collect();
        let (out, shown) = window(&text, Window::Tail(3));
        assert_eq!(out, "line 39997\nline 39998\nline 39999\n");
        assert!(shown.cut());
        let long = format!("{}\nend\n", "x".repeat(200_000));
        assert_eq!(window(&long, Window::Tail(2)).0, long);
        assert_eq!(window(&long, Window::Head(1)).0.len(), 200_001);
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            window("\x1b]0;owned\x07\tok\n", Window::All).0,
            "\\u{1b}]0;owned\\u{7}\tok\n"
        );
    }
}
