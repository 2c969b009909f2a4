//! Listings as the CLI prints them: fetched in pages of a bounded size, each page going on
//! from the cursor of the one before; `--json` whole by default (the array written as its
//! pages arrive), and where a `--limit` cuts it, a JSON object that says so and how to go
//! on, which no reader of an array can take for the whole. A human table may be cut, and
//! then its last line says how many rows it left out.

use serde::Serialize;
use std::io::Write;

/// Rows asked for in one request.
pub const PAGE: u64 = 1000;

/// A JSON array written element by element, as [`super::output::print_json`] writes one.
pub struct JsonArray<W: Write> {
    out: W,
    empty: bool,
}

impl<W: Write> JsonArray<W> {
    pub fn new(mut out: W) -> std::io::Result<Self> {
        out.write_all(b"[")?;
        Ok(JsonArray { out, empty: true })
    }

    pub fn push<T: Serialize>(&mut self, row: &T) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(row)?;
        let sep = if self.empty { "\n" } else { ",\n" };
        self.empty = false;
        self.out.write_all(sep.as_bytes())?;
        for (i, line) in text.lines().enumerate() {
            if i > 0 {
                self.out.write_all(b"\n")?;
            }
            write!(self.out, "  {line}")?;
        }
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<()> {
        let end: &[u8] = if self.empty { b"]\n" } else { b"\n]\n" };
        self.out.write_all(end)?;
        self.out.flush()
    }
}

/// A listing `--limit` cut short, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct Partial<'a, T: Serialize> {
    /// Always true: more rows follow the ones here.
    pub partial: bool,
    /// The rows listed.
    pub rows: &'a [T],
    /// The cursor the rest goes on from.
    pub after: u64,
    /// The command that lists the rest.
    pub next: String,
}

/// The last line of a table that shows `shown` of `total` rows, if it left any out.
pub fn more_line(shown: usize, total: Option<u64>, after: u64) -> Option<String> {
    match total {
        Some(t) if t <= shown as u64 => None,
        Some(t) => Some(format!(
            "… {} more; use --limit N, --all, or --after {after}",
            t - shown as u64
        )),
        None => Some(format!("… more; use --limit N, --all, or --after {after}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_array_reads_back_as_the_rows_written() {
        for n in [0, 1, 3] {
            let rows: Vec<serde_json::Value> = (0..n)
                .map(|i| serde_json::json!({"task": i, "name": format!("t\n{i}")}))
                .collect();
            let mut out = Vec::new();
            let mut array = JsonArray::new(&mut out).unwrap();
            for r in &rows {
                array.push(r).unwrap();
            }
            array.finish().unwrap();
            let back: Vec<serde_json::Value> = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, rows);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("{}\n", serde_json::to_string_pretty(&rows).unwrap())
            );
        }
    }

    #[test]
    fn a_cut_table_says_how_many_rows_it_left_out() {
        assert_eq!(more_line(100, Some(100), 99), None);
        assert_eq!(
            more_line(100, Some(198), 99).unwrap(),
            "… 98 more; use --limit N, --all, or --after 99"
        );
        assert!(more_line(5, None, 4).unwrap().starts_with("… more;"));
    }
}
