//! A page of a user's files in the manager's file service (`GET /v1/files`), read by
//! `hetpilot files ls`.

use serde::{Deserialize, Serialize};

/// The most files one page lists, and the default page size.
pub const MAX_FILES_PER_PAGE: u64 = 1000;

/// One file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FileEntry {
    /// Its name, relative to the user's files (`/`-separated).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written (unix ms).
    pub modified_ms: u64,
}

/// One page of files, in name order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FilePage {
    /// The files of this page.
    pub files: Vec<FileEntry>,
    /// When more follow: the `after` that asks for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}
