//! Why a call to the manager was refused, in words a person can act on.

use crate::db::StoreError;
use crate::queue::{ForgetError, ReportError};
use hetpilot_protocol::error_code::ErrorCode;
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
    /// A body, or what it makes, larger than the manager takes.
    #[error("{0}")]
    TooLarge(String),
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
    /// The manager failed inside (a worker it waited on panicked or was cancelled).
    #[error("{0}")]
    Internal(String),
}

impl ServiceError {
    /// The code the answer carries: a failure inside the manager is `internal`, whatever
    /// its kind; a full disk is the one inside failure a caller can act on.
    pub fn code(&self) -> ErrorCode {
        match self {
            ServiceError::Unauthorized => ErrorCode::Unauthorized,
            ServiceError::Forbidden(_) => ErrorCode::Forbidden,
            ServiceError::NotFound(_) => ErrorCode::NotFound,
            ServiceError::BadRequest(_) => ErrorCode::InvalidField,
            ServiceError::Conflict(_) => ErrorCode::Conflict,
            ServiceError::Gone(_) => ErrorCode::Gone,
            ServiceError::Quota(_) => ErrorCode::QuotaExceeded,
            ServiceError::TooMany(_) => ErrorCode::TooManyStreams,
            ServiceError::NameTooLong(_) => ErrorCode::NameTooLong,
            ServiceError::TooLarge(_) => ErrorCode::TooLarge,
            ServiceError::Store(StoreError::Full { .. }) => ErrorCode::StorageFull,
            ServiceError::Io(_)
            | ServiceError::Store(_)
            | ServiceError::Database(_)
            | ServiceError::Internal(_) => ErrorCode::Internal,
        }
    }
}

impl From<tokio::task::JoinError> for ServiceError {
    fn from(e: tokio::task::JoinError) -> Self {
        let how = if e.is_panic() {
            "panicked"
        } else {
            "was cancelled"
        };
        ServiceError::Internal(format!("a blocking worker {how}"))
    }
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

#[cfg(test)]
mod tests {
    use super::super::test_support;
    use super::ErrorCode;

    /// A read query whose worker panics is the manager's failure: `internal` (answered 500
    /// by the HTTP layer, `server::error`'s tests), not a refusal of the caller's input.
    #[tokio::test]
    async fn a_read_whose_worker_panicked_is_an_internal_failure() {
        let dir = tempfile::tempdir().unwrap();
        let (_, m, _) = test_support::open(dir.path(), &[]);
        let failed = m
            .read(|_| -> rusqlite::Result<()> { panic!("a query's worker failed") })
            .await
            .unwrap_err();
        assert_eq!(failed.code(), ErrorCode::Internal, "{failed:?}");
    }
}
