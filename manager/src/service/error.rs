//! Why a call to the manager was refused, in words a person can act on.

use crate::db::StoreError;
use crate::queue::{ForgetError, ReportError};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServiceError {
    #[error("missing or invalid token (send `Authorization: Bearer TOKEN`)")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Gone(String),
    /// A per-user quota (`[quotas]`) would be exceeded.
    #[error("{0}")]
    Quota(String),
    /// The caller holds as many of something as it may at once (open event streams).
    #[error("{0}")]
    TooMany(String),
    /// A name longer than the filesystem allows.
    #[error("{0}")]
    NameTooLong(String),
    /// The manager's own filesystem failed.
    #[error("{0}")]
    Io(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("database: {0}")]
    Database(#[from] rusqlite::Error),
}

impl From<ReportError> for ServiceError {
    fn from(e: ReportError) -> Self {
        match e {
            ReportError::UnknownAgent(_) | ReportError::UnknownTask(_) => {
                ServiceError::NotFound(e.to_string())
            }
            ReportError::AgentGone(_) => ServiceError::Gone(e.to_string()),
            ReportError::Foreign { .. } => ServiceError::Conflict(e.to_string()),
        }
    }
}

impl From<ForgetError> for ServiceError {
    fn from(e: ForgetError) -> Self {
        match e {
            ForgetError::Unknown(_) => ServiceError::NotFound(e.to_string()),
            ForgetError::Live { .. } => ServiceError::Conflict(e.to_string()),
        }
    }
}
