//! `POST /v1/workflows?format=tasks`: an application file with `[[task]]` tables sent as
//! its text, read with the reader `hetpilot submit FILE` uses
//! ([`crate::workflow::tasks_file`]). The manager has the text and no file location, so
//! errors name the file as [`LABEL`], the application is named by the file or the
//! route's `name=`, and a file the reader cannot take is told apart: one with a `[tasks]`
//! table (whose `each_line` names a file next to it, which the manager cannot read) is an
//! application for `POST /v1/apps`, not a workflow.

use crate::workflow::{tasks_file, Workflow};
use anyhow::anyhow;

/// How errors name the application file (the caller puts its own path in its place).
pub(super) const LABEL: &str = "the application file";

/// The name of an application whose file names none and whose request gives none.
const DEFAULT_NAME: &str = "workflow";

/// Reads `document` as an application file with `[[task]]` tables; every error starts
/// with [`LABEL`].
pub(super) fn read(document: &[u8]) -> anyhow::Result<Workflow> {
    let text =
        std::str::from_utf8(document).map_err(|e| anyhow!("{LABEL}: not UTF-8 text: {e}"))?;
    tasks_file::parse(text, LABEL, DEFAULT_NAME).map_err(|e| match not_a_workflow(text) {
        Some(why) => anyhow!("{LABEL}: {why}"),
        None if format!("{e:#}").starts_with(LABEL) => e,
        None => anyhow!("{LABEL}: {e:#}"),
    })
}

/// Why `text` (which the reader refused) is no workflow, if it is valid TOML that lists
/// no `[[task]]` tables or has a `[tasks]` table.
fn not_a_workflow(text: &str) -> Option<&'static str> {
    let table = toml::from_str::<toml::Table>(text).ok()?;
    if table.contains_key("tasks") {
        return Some(
            "field `tasks`: format=tasks reads [[task]] tables; a file with a [tasks] table \
             is an application (its `each_line` file, relative to it, is read where the file \
             is): submit it with POST /v1/apps (Python: Client.submit_app_file, the CLI: \
             hetpilot submit FILE)",
        );
    }
    (!table.contains_key("task"))
        .then_some("field `task`: no [[task]] tables (format=tasks reads a workflow's tasks there)")
}
