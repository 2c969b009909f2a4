//! The tables inside the reproduction documents. A block in `docs/reproduction/<paper>.md`
//! opens with a marker naming a committed output file (relative to `docs/reproduction/`)
//! and closes with `<!-- reproduce: end -->`:
//!
//! - `<!-- reproduce: include staging/fig5a_storage_nodes_claims.md -->` holds the file
//!   verbatim (a paired-comparison table, a report's table);
//! - `<!-- reproduce: staging-throughput staging/fig5a_storage_nodes.csv -->` holds a
//!   staging CSV's medians as one row per algorithm and one column per setting, each cell
//!   `tasks/s (GB moved)`.
//!
//! A full `hetpilot-research reproduce` rewrites the blocks after its runs, so the documents' tables
//! are regenerated with the files they show; `--check` fails when a block differs from what
//! the committed files give, so a table in a document cannot drift from its data. The prose
//! around the blocks is written by hand.

use std::path::{Component, Path};

use anyhow::{bail, Context};

const OPEN: &str = "<!-- reproduce: ";
const CLOSE: &str = "-->";
const END: &str = "<!-- reproduce: end -->";

/// What a block holds.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// The file's text as is.
    Include,
    /// A `simulate staging --csv` file pivoted: algorithms × settings.
    StagingThroughput,
}

/// Returns `doc` with every block's content rendered afresh from the files under `docs`
/// (the `docs/reproduction` directory); `name` labels error messages.
pub fn refresh(doc: &str, docs: &Path, name: &str) -> anyhow::Result<String> {
    let mut out = String::with_capacity(doc.len());
    let mut lines = doc.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        out.push_str(line);
        out.push('\n');
        let Some((kind, file)) = marker(line).with_context(|| format!("{name} line {}", n + 1))?
        else {
            continue;
        };
        let closed = lines.by_ref().any(|(_, l)| l.trim() == END);
        if !closed {
            bail!(
                "{name} line {}: the block opened here has no `{END}` line",
                n + 1
            );
        }
        let path = docs.join(file);
        let body = render(&kind, &path)
            .with_context(|| format!("{name} line {}: cannot render {}", n + 1, path.display()))?;
        out.push_str(&body);
        if !body.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(END);
        out.push('\n');
    }
    Ok(out)
}

/// The block kind and file a marker line names; `None` for any other line.
fn marker(line: &str) -> anyhow::Result<Option<(Kind, &str)>> {
    let line = line.trim();
    let Some(rest) = line.strip_prefix(OPEN) else {
        return Ok(None);
    };
    if line == END {
        bail!("`{END}` without a block opened before it");
    }
    let Some(rest) = rest.strip_suffix(CLOSE) else {
        bail!("a block marker must end with `{CLOSE}` on the same line");
    };
    let mut words = rest.split_whitespace();
    let kind = match words.next() {
        Some("include") => Kind::Include,
        Some("staging-throughput") => Kind::StagingThroughput,
        other => bail!(
            "unknown block kind {:?} (expected `include` or `staging-throughput`)",
            other.unwrap_or("")
        ),
    };
    let (Some(file), None) = (words.next(), words.next()) else {
        bail!("a block marker names exactly one file");
    };
    let relative = Path::new(file)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if !relative {
        bail!("{file:?}: a block names a file below docs/reproduction (no `..`, not absolute)");
    }
    Ok(Some((kind, file)))
}

/// Brings `<docs>/<paper>.md`'s blocks up to date with the committed files: with `check`,
/// returns a line describing the first difference instead of writing. A paper without a
/// document has nothing to do.
pub fn sync(docs: &Path, paper: &str, check: bool) -> anyhow::Result<Option<String>> {
    let path = docs.join(format!("{paper}.md"));
    let Ok(old) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let new = refresh(&old, docs, &path.display().to_string())?;
    if new == old {
        return Ok(None);
    }
    if check {
        return Ok(Some(format!(
            "{}: a table block differs from the committed files (`hetpilot-research reproduce --tables-only` rewrites it): {}",
            path.display(),
            super::check::first_difference(old.as_bytes(), new.as_bytes())
        )));
    }
    std::fs::write(&path, new).with_context(|| format!("cannot write {}", path.display()))?;
    println!("{}: tables refreshed", path.display());
    Ok(None)
}

fn render(kind: &Kind, path: &Path) -> anyhow::Result<String> {
    match kind {
        Kind::Include => Ok(std::fs::read_to_string(path)?),
        Kind::StagingThroughput => staging_throughput(path),
    }
}

/// One row per algorithm, one column per setting (both in the CSV's order of first
/// appearance); a cell is `tasks/s (GB)`, `–` where the CSV has no such pair.
fn staging_throughput(path: &Path) -> anyhow::Result<String> {
    let mut reader = csv::Reader::from_path(path)?;
    let headers = reader.headers()?.clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .with_context(|| format!("the CSV has no `{name}` column"))
    };
    let (setting, algorithm) = (column("setting")?, column("algorithm")?);
    let (throughput, gb) = (column("throughput_tasks_per_s")?, column("gb_transferred")?);
    let mut settings: Vec<String> = Vec::new();
    let mut algorithms: Vec<String> = Vec::new();
    let mut cells = std::collections::HashMap::new();
    for (i, record) in reader.records().enumerate() {
        let record = record?;
        let field = |c: usize| record.get(c).unwrap_or_default().to_string();
        let number = |c: usize| -> anyhow::Result<f64> {
            field(c)
                .parse()
                .with_context(|| format!("row {}: {:?} is not a number", i + 2, field(c)))
        };
        let (s, a) = (field(setting), field(algorithm));
        let cell = format!("{:.3} ({:.2})", number(throughput)?, number(gb)?);
        if !settings.contains(&s) {
            settings.push(s.clone());
        }
        if !algorithms.contains(&a) {
            algorithms.push(a.clone());
        }
        cells.insert((s, a), cell);
    }
    let mut out = String::from("| algorithm |");
    for s in &settings {
        out.push_str(&format!(" {s}: tasks/s (GB) |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(settings.len()));
    out.push('\n');
    for a in &algorithms {
        out.push_str(&format!("| {a} |"));
        for s in &settings {
            let cell = cells.get(&(s.clone(), a.clone()));
            out.push_str(&format!(" {} |", cell.map_or("–", String::as_str)));
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("p")).unwrap();
        std::fs::write(dir.path().join("p/claims.md"), "| a |\n|---|\n| 1 |\n").unwrap();
        std::fs::write(
            dir.path().join("p/run.csv"),
            "setting,algorithm,batch_seconds,throughput_tasks_per_s,gb_transferred\n\
             2,x,10,7.4436,15.057\n2,y,11,6.1,14.6784\n6,x,9,8.2651,17.153\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn blocks_are_rewritten_from_their_files_and_the_prose_is_kept() {
        let dir = docs();
        let doc = "Intro.\n<!-- reproduce: include p/claims.md -->\nstale\n<!-- reproduce: end -->\n\
                   between\n<!-- reproduce: staging-throughput p/run.csv -->\n<!-- reproduce: end -->\nafter\n";
        let new = refresh(doc, dir.path(), "t.md").unwrap();
        assert_eq!(
            new,
            "Intro.\n<!-- reproduce: include p/claims.md -->\n| a |\n|---|\n| 1 |\n<!-- reproduce: end -->\n\
             between\n<!-- reproduce: staging-throughput p/run.csv -->\n\
             | algorithm | 2: tasks/s (GB) | 6: tasks/s (GB) |\n|---|---|---|\n\
             | x | 7.444 (15.06) | 8.265 (17.15) |\n| y | 6.100 (14.68) | – |\n\
             <!-- reproduce: end -->\nafter\n"
        );
        assert_eq!(
            refresh(&new, dir.path(), "t.md").unwrap(),
            new,
            "idempotent"
        );
    }

    #[test]
    fn broken_markers_and_files_are_errors_that_name_the_line() {
        let dir = docs();
        let err = |doc: &str| format!("{:#}", refresh(doc, dir.path(), "t.md").unwrap_err());
        let open = err("a\n<!-- reproduce: include p/claims.md -->\nx\n");
        assert!(open.contains("t.md line 2") && open.contains("no `<!-- reproduce: end -->`"));
        assert!(err("<!-- reproduce: include ../secret -->\n").contains("no `..`"));
        assert!(err("<!-- reproduce: include /etc/passwd -->\n").contains("not absolute"));
        assert!(err("<!-- reproduce: table p/run.csv -->\n").contains("unknown block kind"));
        assert!(
            err("<!-- reproduce: include p/gone.md -->\n<!-- reproduce: end -->\n")
                .contains("cannot render")
        );
        assert!(err("<!-- reproduce: end -->\n").contains("without a block"));
        let csv = "<!-- reproduce: staging-throughput p/claims.md -->\n<!-- reproduce: end -->\n";
        assert!(err(csv).contains("no `setting` column"));
    }

    #[test]
    fn sync_reports_a_stale_block_under_check_and_rewrites_it_otherwise() {
        let dir = docs();
        let doc = dir.path().join("p.md");
        let stale = "<!-- reproduce: include p/claims.md -->\n| old |\n<!-- reproduce: end -->\n";
        std::fs::write(&doc, stale).unwrap();
        let drift = sync(dir.path(), "p", true).unwrap().unwrap();
        assert!(
            drift.contains("p.md") && drift.contains("line 2"),
            "{drift}"
        );
        assert_eq!(
            std::fs::read_to_string(&doc).unwrap(),
            stale,
            "check writes nothing"
        );
        assert_eq!(sync(dir.path(), "p", false).unwrap(), None);
        assert!(std::fs::read_to_string(&doc).unwrap().contains("| 1 |"));
        assert_eq!(sync(dir.path(), "p", true).unwrap(), None, "now current");
        assert_eq!(sync(dir.path(), "absent", true).unwrap(), None);
    }
}
