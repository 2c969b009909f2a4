//! `--check`: every file an experiment produced must equal its committed counterpart,
//! byte for byte; a difference names the file and its first differing line.

use std::path::Path;

use anyhow::{bail, Context};

/// What the comparison found so far.
#[derive(Debug, Default)]
pub struct Report {
    /// Files compared.
    pub compared: usize,
    /// Experiments skipped because an input was absent.
    pub skipped: usize,
    /// One line per drifted or missing file.
    pub drift: Vec<String>,
}

impl Report {
    /// Compares every file under `produced` with the same relative path under `committed`.
    pub fn compare(&mut self, id: &str, produced: &Path, committed: &Path) -> anyhow::Result<()> {
        let mut files = Vec::new();
        walk(produced, produced, &mut files)?;
        files.sort();
        for rel in files {
            self.compared += 1;
            let new = std::fs::read(produced.join(&rel))?;
            let old_path = committed.join(&rel);
            match std::fs::read(&old_path) {
                Err(_) => self.drift.push(format!(
                    "{id}: {} is produced but not committed",
                    old_path.display()
                )),
                Ok(old) if old != new => self.drift.push(format!(
                    "{id}: {} differs: {}",
                    old_path.display(),
                    first_difference(&old, &new)
                )),
                Ok(_) => {}
            }
        }
        Ok(())
    }

    /// Prints the summary; an error when anything drifted.
    pub fn finish(self) -> anyhow::Result<()> {
        println!(
            "checked {} file(s), {} experiment(s) skipped",
            self.compared, self.skipped
        );
        if !self.drift.is_empty() {
            for d in &self.drift {
                println!("DRIFT {d}");
            }
            bail!(
                "{} file(s) differ from what the code produces; regenerate them with `hetpilot-research reproduce` (add --quick for the quick tables) and commit",
                self.drift.len()
            );
        }
        Ok(())
    }
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<std::path::PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            walk(base, &path, out)?;
        } else {
            out.push(path.strip_prefix(base)?.to_path_buf());
        }
    }
    Ok(())
}

/// `line N: committed "…" vs produced "…"`.
pub(super) fn first_difference(old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let mut a = old.lines();
    let mut b = new.lines();
    let mut n = 1;
    loop {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) if x == y => n += 1,
            (x, y) => {
                let cut = |s: Option<&str>| s.map(|s| s.chars().take(120).collect::<String>());
                return format!("line {n}: committed {:?} vs produced {:?}", cut(x), cut(y));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_or_uncommitted_file_is_drift_and_an_equal_one_is_not() {
        let produced = tempfile::tempdir().unwrap();
        let committed = tempfile::tempdir().unwrap();
        std::fs::create_dir(produced.path().join("sub")).unwrap();
        std::fs::create_dir(committed.path().join("sub")).unwrap();
        std::fs::write(produced.path().join("same.csv"), "a\nb\n").unwrap();
        std::fs::write(committed.path().join("same.csv"), "a\nb\n").unwrap();
        std::fs::write(produced.path().join("sub/t.md"), "a\nc\n").unwrap();
        std::fs::write(committed.path().join("sub/t.md"), "a\nb\n").unwrap();
        std::fs::write(produced.path().join("new.svg"), "x").unwrap();
        let mut r = Report::default();
        r.compare("p/e", produced.path(), committed.path()).unwrap();
        assert_eq!(r.compared, 3);
        assert_eq!(r.drift.len(), 2, "{:?}", r.drift);
        assert!(r.drift.iter().any(|d| d.contains("t.md differs: line 2")));
        assert!(r
            .drift
            .iter()
            .any(|d| d.contains("new.svg is produced but not committed")));
        assert!(r.finish().is_err());
    }
}
