//! Every row of a paged listing route (`/v1/apps`, `/v1/agents`, `/v1/pilots`, `/v1/usage`,
//! `/v1/bandwidths`, `/v1/agent-tokens`), fetched at most [`PAGE`] a request, each page
//! going on after the cursor of the last row of the one before, until a page comes back
//! short: the tables and `--json` of `status`, `agents`, `pilots`, `usage`, `bandwidths`
//! and `token list` are whole.

use super::listing::{JsonArray, PAGE};
use hetpilot::client::Client;
use hetpilot_protocol::listing::Listed;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Hands each page of the listing at `path` to `page`, in the listing's order.
pub async fn each<T: Listed + DeserializeOwned>(
    client: &Client,
    path: &str,
    mut page: impl FnMut(&[T]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut after: Option<String> = None;
    loop {
        let rows: Vec<T> = client.list_page(path, PAGE, after.as_deref()).await?;
        page(&rows)?;
        match rows.last() {
            Some(last) if rows.len() as u64 == PAGE => after = Some(T::cursor(&last.key())),
            _ => return Ok(()),
        }
    }
}

/// Every row of the listing at `path`.
pub async fn all<T: Listed + DeserializeOwned + Clone>(
    client: &Client,
    path: &str,
) -> anyhow::Result<Vec<T>> {
    let mut rows = Vec::new();
    each(client, path, |page: &[T]| {
        rows.extend_from_slice(page);
        Ok(())
    })
    .await?;
    Ok(rows)
}

/// Prints the rows of the listing at `path` that `keep` keeps as one JSON array on
/// stdout, each page written as it arrives.
pub async fn print_json<T: Listed + DeserializeOwned + Serialize>(
    client: &Client,
    path: &str,
    keep: impl Fn(&T) -> bool,
) -> anyhow::Result<()> {
    let mut array = JsonArray::new(std::io::BufWriter::new(std::io::stdout()))?;
    each(client, path, |rows: &[T]| {
        rows.iter()
            .filter(|r| keep(r))
            .try_for_each(|r| array.push(r))
    })
    .await?;
    Ok(array.finish()?)
}
