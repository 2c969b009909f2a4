//! Output helpers: JSON, aligned tables, human units.

pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// A table cell on one line: line breaks (as in a batch system's error output) become
/// " / ", other control characters spaces.
pub fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" / ")
        .replace(|c: char| c.is_control(), " ")
}

/// Prints rows as a left-aligned table under `header`, one line per row.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    print!("{}", table(header, rows));
}

/// The text of [`print_table`].
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| one_line(c)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for row in &rows {
        out.push_str(&line(row));
    }
    out
}

pub fn millis(ms: f64) -> String {
    if ms >= 60_000.0 {
        format!("{:.1} min", ms / 60_000.0)
    } else if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

/// How long ago `then_ms` was, e.g. `42s ago`, `3m ago`, `2h ago`.
pub fn age(now_ms: u64, then_ms: u64) -> String {
    let s = now_ms.saturating_sub(then_ms) / 1000;
    match s {
        0..=119 => format!("{s}s ago"),
        120..=7199 => format!("{}m ago", s / 60),
        _ => format!("{}h ago", s / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn a_multi_line_reason_stays_in_its_row() {
        let rows = vec![
            vec![
                "lab-typo".to_string(),
                "unavailable".to_string(),
                "sbatch: error: invalid partition specified: smal\r\n\
                 sbatch: error: Batch job submission failed\n"
                    .to_string(),
            ],
            vec!["lab-debug".into(), "available".into(), String::new()],
        ];
        let text = table(&["PLATFORM", "STATUS", "REASON"], &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            lines[1],
            "lab-typo   unavailable  sbatch: error: invalid partition specified: smal / \
             sbatch: error: Batch job submission failed"
        );
        assert_eq!(lines[2], "lab-debug  available");
    }
}
