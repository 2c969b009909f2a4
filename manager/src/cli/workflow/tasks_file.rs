//! Application files with `[[task]]` tables, read from a path: the manager library's
//! reader ([`hetpilot::workflow::tasks_file`]), with errors naming the file and the
//! application named after the file's stem unless the file names it.

pub use hetpilot::workflow::tasks_file::is_workflow;

use super::Workflow;
use std::path::Path;

/// Reads the workflow application file `text`, read from `path`.
pub fn parse(text: &str, path: &Path) -> anyhow::Result<Workflow> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workflow".into());
    hetpilot::workflow::tasks_file::parse(text, &path.display().to_string(), &stem)
}
