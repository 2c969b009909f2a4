//! A workflow's external inputs: files its tasks read that no task writes. `--wfcommons`
//! and `--dax` record them by name (and size) only, so they reach the agents through the
//! manager's file service like every other staged file:
//! - with `--emulate`, each is created once at its recorded size × `--size-scale` (as
//!   WfCommons' WfBench creates a benchmark's input files) and stored in the submitter's
//!   files under the submission's prefix;
//! - with `--inputs-dir DIR`, each is the file `DIR/NAME` (every one must exist; the
//!   missing ones are listed), stored the same way.
//!
//! Either way the tasks declare them as inputs with their sizes, so agents stage them
//! through the node cache (fetched once per node however many tasks read them). Without
//! either flag they stay the tasks' own business (a shared filesystem or the working
//! directory). Names are checked before any file is opened (no absolute path, no `..`),
//! and the bytes to store are capped: a workflow file is input like any other, and its
//! recorded sizes may be anything.

use super::{staged_name, WfFile, Workflow};
use anyhow::bail;
use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

/// The most bytes of external inputs one submission stores, and (with `--emulate`) of
/// external inputs and outputs together: 16 GiB.
pub const MAX_STAGED_BYTES: u64 = 16 << 30;

/// How many missing or refused names an error lists before counting the rest.
const LISTED: usize = 20;

/// One external input to store in the file service before the workflow is submitted.
#[derive(Debug, Clone, PartialEq)]
pub struct Upload {
    /// The workflow's name for it.
    pub file: String,
    /// Its name in the file service (under the submission's prefix).
    pub name: String,
    /// Its content: a local file, or `None` for an emulated one (zeros).
    pub path: Option<PathBuf>,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The files some task reads and no task writes, each once (in first-read order), with
/// the largest size any task records for it.
pub fn external(workflow: &Workflow) -> Vec<WfFile> {
    let written: HashSet<&str> = workflow
        .tasks
        .iter()
        .flat_map(|t| &t.outputs)
        .map(|f| f.name.as_str())
        .collect();
    let mut order: Vec<&str> = Vec::new();
    let mut sizes: BTreeMap<&str, Option<u64>> = BTreeMap::new();
    for f in workflow.tasks.iter().flat_map(|t| &t.inputs) {
        if written.contains(f.name.as_str()) {
            continue;
        }
        match sizes.get_mut(f.name.as_str()) {
            Some(size) => *size = (*size).max(f.size),
            None => {
                order.push(&f.name);
                sizes.insert(&f.name, f.size);
            }
        }
    }
    order
        .into_iter()
        .map(|name| WfFile {
            name: name.to_string(),
            size: sizes[name],
        })
        .collect()
}

/// `--emulate`: each external input created at its recorded size × `size_scale` (one
/// with no recorded size is empty).
pub fn emulated(files: &[WfFile], size_scale: f64, prefix: &str) -> Vec<Upload> {
    files
        .iter()
        .map(|f| Upload {
            file: f.name.clone(),
            name: staged_name(prefix, &f.name),
            path: None,
            bytes: super::scale_bytes(f.size.unwrap_or(0), size_scale),
        })
        .collect()
}

/// Emulation's external inputs ([`emulated`]), refused when they and the outputs the
/// emulated tasks write total more than [`MAX_STAGED_BYTES`]; `hint` says what to change.
pub fn emulated_within_bound(
    workflow: &Workflow,
    size_scale: f64,
    prefix: &str,
    hint: &str,
) -> anyhow::Result<Vec<Upload>> {
    let uploads = emulated(&external(workflow), size_scale, prefix);
    let outputs = workflow
        .tasks
        .iter()
        .flat_map(|t| &t.outputs)
        .map(|f| super::scale_bytes(f.size.unwrap_or(0), size_scale));
    let total = uploads
        .iter()
        .map(|u| u.bytes)
        .chain(outputs)
        .fold(0u64, u64::saturating_add);
    check_total(
        total,
        "the emulated workflow's external inputs and outputs",
        hint,
    )?;
    Ok(uploads)
}

/// `names` as a list for an error message: the first few, then how many more.
pub fn listed(names: &[&str]) -> String {
    let mut text: Vec<String> = names
        .iter()
        .take(LISTED)
        .map(|n| format!("`{}`", n.escape_debug()))
        .collect();
    if names.len() > LISTED {
        text.push(format!("and {} more", names.len() - LISTED));
    }
    text.join(", ")
}

/// A workflow's name for a file as a path beneath `--inputs-dir`: relative, every
/// component a real name (no `..`, `.`, empty or absolute part), no NUL.
fn beneath(name: &str) -> Option<&Path> {
    let path = Path::new(name);
    let plain = !name.is_empty()
        && !name.contains('\0')
        && !name.ends_with('/')
        && path.components().all(|c| matches!(c, Component::Normal(_)))
        && !name.split('/').any(|c| c.is_empty() || c == ".");
    plain.then_some(path)
}

/// `--inputs-dir DIR`: each external input is the regular file `DIR/NAME`. Refuses names
/// that could escape `DIR`, and lists every missing file.
pub fn from_dir(files: &[WfFile], dir: &Path, prefix: &str) -> anyhow::Result<Vec<Upload>> {
    if !dir.is_dir() {
        bail!("--inputs-dir {}: not a directory", dir.display());
    }
    let refused: Vec<&str> = files
        .iter()
        .filter(|f| beneath(&f.name).is_none())
        .map(|f| f.name.as_str())
        .collect();
    if !refused.is_empty() {
        bail!(
            "--inputs-dir {}: the workflow names external inputs that are not plain relative \
             names and could escape the directory: {}",
            dir.display(),
            listed(&refused)
        );
    }
    let mut uploads = Vec::with_capacity(files.len());
    let mut missing: Vec<&str> = Vec::new();
    for f in files {
        let path = dir.join(beneath(&f.name).expect("checked above"));
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => uploads.push(Upload {
                file: f.name.clone(),
                name: staged_name(prefix, &f.name),
                path: Some(path),
                bytes: m.len(),
            }),
            _ => missing.push(&f.name),
        }
    }
    if !missing.is_empty() {
        bail!(
            "--inputs-dir {}: {} of the workflow's {} external inputs are not files there: {}",
            dir.display(),
            missing.len(),
            files.len(),
            listed(&missing)
        );
    }
    Ok(uploads)
}

/// Refuses more than [`MAX_STAGED_BYTES`] in all: `what` says what was counted.
pub fn check_total(bytes: u64, what: &str, hint: &str) -> anyhow::Result<()> {
    if bytes > MAX_STAGED_BYTES {
        bail!(
            "{what} total {bytes} bytes, more than the {} GiB one workflow submission may \
             store in the file service; {hint}",
            MAX_STAGED_BYTES >> 30
        );
    }
    Ok(())
}

/// The workflow's name → the size it is staged with, for the tasks' declarations.
pub fn staged_sizes(uploads: &[Upload]) -> std::collections::HashMap<String, u64> {
    uploads.iter().map(|u| (u.file.clone(), u.bytes)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::WfTask;

    fn file(name: &str, size: u64) -> WfFile {
        WfFile {
            name: name.into(),
            size: Some(size),
        }
    }

    fn workflow() -> Workflow {
        Workflow {
            name: "w".into(),
            tasks: vec![
                WfTask {
                    id: "a".into(),
                    inputs: vec![file("raw.fits", 100), file("hdr", 5)],
                    outputs: vec![file("p.fits", 10)],
                    ..WfTask::default()
                },
                WfTask {
                    id: "b".into(),
                    parents: vec!["a".into()],
                    inputs: vec![file("p.fits", 10), file("raw.fits", 120)],
                    ..WfTask::default()
                },
            ],
            ..Workflow::default()
        }
    }

    #[test]
    fn external_inputs_are_the_files_read_and_never_written_each_once() {
        let ext = external(&workflow());
        assert_eq!(ext, vec![file("raw.fits", 120), file("hdr", 5)]);
        let up = emulated(&ext, 0.5, "wf-1");
        assert_eq!(up[0].name, "wf-1/raw.fits");
        assert_eq!((up[0].bytes, up[1].bytes), (60, 2));
        assert!(up.iter().all(|u| u.path.is_none()));
    }

    #[test]
    fn inputs_dir_lists_the_missing_files_and_refuses_escaping_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("raw.fits"), b"0123456789").unwrap();
        let ext = external(&workflow());
        let err = from_dir(&ext, dir.path(), "p").unwrap_err().to_string();
        assert!(
            err.contains("1 of the workflow's 2") && err.contains("`hdr`"),
            "{err}"
        );
        std::fs::write(dir.path().join("hdr"), b"h").unwrap();
        let up = from_dir(&ext, dir.path(), "p").unwrap();
        assert_eq!(up[0].bytes, 10, "the real size, not the recorded one");
        assert_eq!(
            up[0].path.as_deref(),
            Some(dir.path().join("raw.fits").as_path())
        );
        for bad in [
            "../etc/passwd",
            "/etc/passwd",
            "a/../../b",
            "",
            "a//b",
            "./x",
        ] {
            let err = from_dir(&[file(bad, 1)], dir.path(), "p").unwrap_err();
            assert!(err.to_string().contains("could escape"), "{bad}: {err}");
        }
        let many: Vec<WfFile> = (0..25).map(|i| file(&format!("m{i}"), 1)).collect();
        let err = from_dir(&many, dir.path(), "p").unwrap_err().to_string();
        assert!(err.contains("and 5 more") && err.contains("`m19`"), "{err}");
        assert!(!err.contains("`m20`"), "{err}");
    }

    #[test]
    fn the_total_is_capped_with_an_error_that_says_what_to_do() {
        check_total(MAX_STAGED_BYTES, "x", "y").unwrap();
        let err = check_total(MAX_STAGED_BYTES + 1, "the external inputs", "lower it")
            .unwrap_err()
            .to_string();
        assert!(err.contains("16 GiB") && err.contains("lower it"), "{err}");
    }
}
