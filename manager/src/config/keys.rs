//! A configuration file's keys, checked before the file is layered: a key the manager
//! does not know is refused with its file and line instead of being silently ignored. The
//! classic slip is a top-level key written after a `[table]` or `[[platforms]]` header,
//! which TOML puts inside that table; the message says so.

use super::{ConfigError, ManagerConfig};
use std::path::Path;
use toml::de::{DeTable, DeValue};

/// One step of a key's path: a table key or an array index.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Refuses `text` (the contents of `path`) if it is not TOML, if a value has the wrong
/// type, or if it holds a key [`ManagerConfig`] does not know; each problem names the line.
pub fn check_file(path: &Path, text: &str) -> Result<(), ConfigError> {
    let file_error = |problem: String| ConfigError::File {
        path: path.to_path_buf(),
        problem,
    };
    let unknown = ignored_keys(text).map_err(file_error)?;
    if unknown.is_empty() {
        return Ok(());
    }
    let document = DeTable::parse(text).map_err(|e| file_error(e.to_string()))?;
    let mut located: Vec<(Option<usize>, String)> = unknown
        .iter()
        .map(|steps| {
            let line = key_offset(document.get_ref(), steps).map(|at| line_of(text, at));
            let problem = format!("unknown key `{}`{}", dotted(steps), misplaced_hint(steps));
            (line, problem)
        })
        .collect();
    located.sort();
    let problems: Vec<String> = located
        .into_iter()
        .map(|(line, problem)| match line {
            Some(line) => format!("line {line}: {problem}"),
            None => problem,
        })
        .collect();
    Err(file_error(problems.join("; ")))
}

/// The paths of the keys deserializing `text` into [`ManagerConfig`] passes over, or the
/// parser's message (with line and column) when it is not valid.
fn ignored_keys(text: &str) -> Result<Vec<Vec<Step>>, String> {
    let deserializer = toml::Deserializer::parse(text).map_err(|e| e.to_string())?;
    let mut unknown = Vec::new();
    let parsed: Result<ManagerConfig, _> =
        serde_ignored::deserialize(deserializer, |path| unknown.push(steps(&path)));
    parsed.map_err(|e| e.to_string())?;
    Ok(unknown)
}

/// A hint for a nested key that is really a top-level key written below a table header.
fn misplaced_hint(steps: &[Step]) -> String {
    let (Some(Step::Key(last)), true) = (steps.last(), steps.len() > 1) else {
        return String::new();
    };
    let mut alone = toml::Table::new();
    alone.insert(last.clone(), toml::Value::Table(toml::Table::new()));
    let mut ignored = false;
    // A wrongly typed value is fine here: only whether the name is known matters.
    let _: Result<ManagerConfig, _> =
        serde_ignored::deserialize(toml::Value::Table(alone), |_| ignored = true);
    if ignored {
        return String::new();
    }
    let header = match (&steps[0], steps.get(1)) {
        (Step::Key(table), Some(Step::Index(_))) => format!("[[{table}]]"),
        (Step::Key(table), _) => format!("[{table}]"),
        (Step::Index(_), _) => "table".into(),
    };
    format!(
        " (`{last}` is a top-level key: write it above the first {header} header, \
         since TOML puts every key after a header into that table)"
    )
}

fn steps(path: &serde_ignored::Path<'_>) -> Vec<Step> {
    use serde_ignored::Path;
    let mut out = match path {
        Path::Root => return Vec::new(),
        Path::Seq { parent, .. }
        | Path::Map { parent, .. }
        | Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => steps(parent),
    };
    match path {
        Path::Seq { index, .. } => out.push(Step::Index(*index)),
        Path::Map { key, .. } => out.push(Step::Key(key.clone())),
        _ => {}
    }
    out
}

fn dotted(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The byte offset of the key `steps` names in `table`.
fn key_offset(table: &DeTable<'_>, steps: &[Step]) -> Option<usize> {
    let (Step::Key(first), rest) = steps.split_first()? else {
        return None;
    };
    let (key, value) = table.iter().find(|(k, _)| k.get_ref().as_ref() == first)?;
    if rest.is_empty() {
        return Some(key.span().start);
    }
    value_key_offset(value.get_ref(), rest)
}

fn value_key_offset(value: &DeValue<'_>, steps: &[Step]) -> Option<usize> {
    match (value, steps.first()?) {
        (DeValue::Table(table), Step::Key(_)) => key_offset(table, steps),
        (DeValue::Array(items), Step::Index(i)) => {
            value_key_offset(items.get(*i)?.get_ref(), &steps[1..])
        }
        _ => None,
    }
}

/// The 1-based line holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> String {
        match check_file(Path::new("site.toml"), text) {
            Ok(()) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_top_level_key_after_a_platform_header_is_refused_with_its_line_and_why() {
        let text = "listen = \"127.0.0.1:0\"\n\n[[platforms]]\nname = \"gene\"\n\
                    store_grant_ttl_secs = 60\n";
        let err = problem(text);
        assert!(err.contains("site.toml"), "{err}");
        assert!(
            err.contains("line 5: unknown key `platforms[0].store_grant_ttl_secs`"),
            "{err}"
        );
        assert!(err.contains("top-level key"), "{err}");
    }

    #[test]
    fn misspelt_keys_are_refused_at_the_top_and_in_tables() {
        let err = problem("store_grant_ttl_sec = 600\n[limits]\nmax_large_request = 2\n");
        assert!(
            err.contains("line 1: unknown key `store_grant_ttl_sec`"),
            "{err}"
        );
        assert!(
            err.contains("line 3: unknown key `limits.max_large_request`"),
            "{err}"
        );
        assert!(!err.contains("top-level key"), "{err}");
    }

    #[test]
    fn a_table_that_refuses_unknown_fields_names_the_line_too() {
        let err = problem("\n[quotas]\ntasks_per_sumbit = 5\n");
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("tasks_per_sumbit"), "{err}");
    }

    #[test]
    fn wrong_types_and_broken_toml_name_the_line() {
        let err = problem("listen = \"x\"\nlease_timeout_secs = \"soon\"\n");
        assert!(err.contains("line 2"), "{err}");
        let err = problem("listen = [1,2\n");
        assert!(err.contains("line 1"), "{err}");
    }

    #[test]
    fn every_known_key_passes() {
        let text = "listen = \"127.0.0.1:0\"\ndata_dir = \"/tmp/x\"\nlease_timeout_secs = 5\n\
                    store_grant_ttl_secs = 600\n[limits]\nmax_large_requests = 2\n\
                    [quotas]\ntasks_per_submit = 5\n[[platforms]]\nname = \"gene\"\n\
                    description = \"d\"\n";
        assert_eq!(problem(text), "");
    }
}
