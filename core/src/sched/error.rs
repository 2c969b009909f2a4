//! Errors of the scheduling core: bad runtime-profile data and inconsistent snapshots or
//! settings.

use thiserror::Error;

/// A runtime profile (the table of [`RuntimeProfile`](super::profile::RuntimeProfile)) that
/// cannot be used.
#[derive(Debug, Error)]
pub enum RuntimeProfileError {
    /// The text is not TOML, or not the profile's layout.
    #[error("{file}: not valid profile TOML: {message}")]
    Syntax {
        /// Where the profile came from (a file path, or `"<memory>"`).
        file: String,
        /// The TOML parser's message.
        message: String,
    },
    /// The profile parses but one of its values is wrong.
    #[error("{file}: field `{field}`: {problem}")]
    Invalid {
        /// Where the profile came from (a file path, or `"<memory>"`).
        file: String,
        /// Path of the wrong value, e.g. ``application `blast`.one_core.cluster-a``.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// A scheduler configuration or snapshot that the policies cannot work with.
#[derive(Debug, Error, PartialEq)]
pub enum SchedError {
    /// No policy or metric of that name; the error lists the known ones.
    #[error(transparent)]
    UnknownName(#[from] hetpilot_protocol::named::UnknownName),
    /// A knob of [`SchedulerSettings`](super::SchedulerSettings) out of range.
    #[error("setting `{field}`: {problem}")]
    InvalidSetting {
        /// The setting's field name.
        field: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
    /// A [`Snapshot`](super::Snapshot) that contradicts itself or its profile.
    #[error("snapshot field `{field}`: {problem}")]
    InvalidSnapshot {
        /// Path of the wrong value, e.g. `applications[2].profile_index`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
}
