//! Per-run staging figures, one row per run of a task with files: bytes fetched from
//! sources, bytes found in the node's cache, bytes stored back, and the measured
//! transfers per endpoint (JSON).

use hetpilot_protocol::protocol::TaskResult;
use rusqlite::{params, Transaction};

/// Records the staging figures of a result, if it has any.
pub fn record(tx: &Transaction<'_>, r: &TaskResult) -> rusqlite::Result<()> {
    let Some(s) = &r.staging else {
        return Ok(());
    };
    let transfers = serde_json::to_string(&s.transfers).expect("transfers serialize");
    tx.prepare_cached(
        "INSERT OR REPLACE INTO attempt_staging
            (app_id, idx, attempt, bytes_fetched, bytes_cached, bytes_uploaded, transfers)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        r.task.app.0 as i64,
        r.task.index as i64,
        r.attempt,
        s.bytes_fetched as i64,
        s.bytes_cached as i64,
        s.bytes_uploaded as i64,
        transfers
    ])?;
    Ok(())
}
