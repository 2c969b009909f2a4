//! An application's task rows, fetched page by page (at most [`PAGE`] a request), each page
//! going on after the last task index of the one before.

use super::listing::PAGE;
use hetpilot::client::Client;
use hetpilot_protocol::protocol::TaskInfo;
use hetpilot_protocol::AppId;

/// Which rows: in `state` (all without), after task index `after`, at most `limit` (all
/// without).
pub struct Query<'a> {
    pub app: AppId,
    pub state: Option<&'a str>,
    pub after: Option<u64>,
    pub limit: Option<u64>,
}

/// Hands each page of the rows `q` names to `page`, in index order; returns whether rows
/// past `q.limit` remain.
pub async fn each(
    client: &Client,
    q: &Query<'_>,
    mut page: impl FnMut(&[TaskInfo]) -> anyhow::Result<()>,
) -> anyhow::Result<bool> {
    let mut after = q.after;
    let mut listed: u64 = 0;
    loop {
        // One row past the limit says whether more remain.
        let want = match q.limit {
            Some(limit) => PAGE.min(limit.saturating_sub(listed).saturating_add(1)),
            None => PAGE,
        };
        let rows = client.tasks(q.app, q.state, want, after).await?;
        let full = rows.len() as u64 == want;
        let keep = match q.limit {
            Some(limit) => rows.len().min(limit.saturating_sub(listed) as usize),
            None => rows.len(),
        };
        page(&rows[..keep])?;
        listed = listed.saturating_add(keep as u64);
        if keep < rows.len() {
            return Ok(true);
        }
        if !full {
            return Ok(false);
        }
        after = rows.last().map(|t| t.task.index);
    }
}

/// The rows `q` names, and whether rows past `q.limit` remain.
pub async fn collect(client: &Client, q: &Query<'_>) -> anyhow::Result<(Vec<TaskInfo>, bool)> {
    let mut all = Vec::new();
    let more = each(client, q, |rows| {
        all.extend_from_slice(rows);
        Ok(())
    })
    .await?;
    Ok((all, more))
}
