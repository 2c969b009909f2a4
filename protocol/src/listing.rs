//! The order and cursors of the paged listing routes (`GET /v1/apps`, `/v1/agents`,
//! `/v1/pilots`, `/v1/usage`, `/v1/bandwidths`, `/v1/agent-tokens`): each row has a key
//! that orders the listing, and a page goes on after the key of the last row of the page
//! before, which `?after=` carries as the text [`Listed::cursor`] writes.

use crate::pilots::PilotRecord;
use crate::protocol::{AgentInfo, AgentTokenInfo, AppSummary};
use crate::views::{BandwidthRow, UserUsage};
use crate::{AgentId, AppId};
use std::cmp::Reverse;

/// A row of a paged listing.
pub trait Listed {
    /// Orders the listing; unique per row.
    type Key: Ord;
    /// This row's key.
    fn key(&self) -> Self::Key;
    /// The `after=` text of a key.
    fn cursor(key: &Self::Key) -> String;
    /// The key `after=` text names, if it names one.
    fn parse_cursor(text: &str) -> Option<Self::Key>;
}

impl Listed for AppSummary {
    type Key = AppId;
    fn key(&self) -> AppId {
        self.app
    }
    fn cursor(key: &AppId) -> String {
        key.0.to_string()
    }
    fn parse_cursor(text: &str) -> Option<AppId> {
        text.parse().ok().map(AppId)
    }
}

impl Listed for AgentInfo {
    type Key = AgentId;
    fn key(&self) -> AgentId {
        self.agent
    }
    fn cursor(key: &AgentId) -> String {
        key.0.to_string()
    }
    fn parse_cursor(text: &str) -> Option<AgentId> {
        text.parse().ok().map(AgentId)
    }
}

/// Oldest first: submission time, then name (unique). The cursor is `[ms,"name"]`.
impl Listed for PilotRecord {
    type Key = (u64, String);
    fn key(&self) -> (u64, String) {
        (self.submitted_ms, self.name.clone())
    }
    fn cursor(key: &(u64, String)) -> String {
        serde_json::to_string(key).unwrap_or_default()
    }
    fn parse_cursor(text: &str) -> Option<(u64, String)> {
        serde_json::from_str(text).ok()
    }
}

impl Listed for UserUsage {
    type Key = String;
    fn key(&self) -> String {
        self.user.clone()
    }
    fn cursor(key: &String) -> String {
        key.clone()
    }
    fn parse_cursor(text: &str) -> Option<String> {
        Some(text.to_string())
    }
}

/// By platform, then endpoint. The cursor is `["platform","endpoint"]`.
impl Listed for BandwidthRow {
    type Key = (String, String);
    fn key(&self) -> (String, String) {
        (self.platform.clone(), self.endpoint.clone())
    }
    fn cursor(key: &(String, String)) -> String {
        serde_json::to_string(key).unwrap_or_default()
    }
    fn parse_cursor(text: &str) -> Option<(String, String)> {
        serde_json::from_str(text).ok()
    }
}

/// Newest first, then by id. The cursor is `[created_ms,"id"]`.
impl Listed for AgentTokenInfo {
    type Key = (Reverse<u64>, String);
    fn key(&self) -> (Reverse<u64>, String) {
        (Reverse(self.created_at_ms), self.id.clone())
    }
    fn cursor(key: &(Reverse<u64>, String)) -> String {
        serde_json::to_string(&(key.0 .0, &key.1)).unwrap_or_default()
    }
    fn parse_cursor(text: &str) -> Option<(Reverse<u64>, String)> {
        let (ms, id): (u64, String) = serde_json::from_str(text).ok()?;
        Some((Reverse(ms), id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T: Listed>(key: T::Key)
    where
        T::Key: std::fmt::Debug,
    {
        assert_eq!(T::parse_cursor(&T::cursor(&key)), Some(key));
    }

    #[test]
    fn every_cursor_reads_back_as_its_key() {
        round_trips::<AppSummary>(AppId(u64::MAX));
        round_trips::<AgentInfo>(AgentId(7));
        round_trips::<PilotRecord>((5, "a\"b,c".into()));
        round_trips::<UserUsage>("ann".into());
        round_trips::<BandwidthRow>(("p".into(), "http://h:1/\"".into()));
        round_trips::<AgentTokenInfo>((Reverse(9), "ab12".into()));
        assert_eq!(PilotRecord::parse_cursor("junk"), None);
        assert_eq!(AppSummary::parse_cursor("-1"), None);
    }
}
