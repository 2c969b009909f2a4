//! Errors of the scheduling core: bad runtime-profile data and inconsistent snapshots or
//! settings.

use thiserror::Error;

/// A runtime profile (the table of [`RuntimeProfile`](super::profile::RuntimeProfile)) that
/// cannot be used.
#[derive(Debug, Error)]
pub enum RuntimeProfileError {
    #[error("{file}: not valid profile TOML: {message}")]
    Syntax { file: String, message: String },
    #[error("{file}: field `{field}`: {problem}")]
    Invalid {
        file: String,
        field: String,
        problem: String,
    },
}

/// A scheduler configuration or snapshot that the policies cannot work with.
#[derive(Debug, Error, PartialEq)]
pub enum SchedError {
    #[error("unknown {level} policy `{name}` (known: {known})")]
    UnknownPolicy {
        level: &'static str,
        name: String,
        known: String,
    },
    #[error("unknown {what} `{name}` (known: {known})")]
    UnknownMetric {
        what: &'static str,
        name: String,
        known: String,
    },
    #[error("setting `{field}`: {problem}")]
    InvalidSetting {
        field: &'static str,
        problem: String,
    },
    #[error("snapshot field `{field}`: {problem}")]
    InvalidSnapshot { field: String, problem: String },
}
