//! Identifiers: applications, agents, and tasks (`APP.INDEX`, e.g. `7.42`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// An application (a bag of tasks submitted together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct AppId(pub u64);

/// A registered agent (one pilot on one node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct AgentId(pub u64);

/// One task of one application: the application id and the task's index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskRef {
    /// The application the task belongs to.
    pub app: AppId,
    /// The task's position in its application, from 0 (`{index}` in templates).
    pub index: u64,
}

impl fmt::Display for AppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.app, self.index)
    }
}

impl FromStr for AppId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim()
            .parse()
            .map(AppId)
            .map_err(|_| format!("`{s}` is not an application id (expected a number like 7)"))
    }
}

impl FromStr for TaskRef {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a task id (expected APP.INDEX, like 7.42)");
        let (app, index) = s.trim().split_once('.').ok_or_else(bad)?;
        Ok(TaskRef {
            app: AppId(app.parse().map_err(|_| bad())?),
            index: index.parse().map_err(|_| bad())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ref_round_trips_through_display() {
        let t = TaskRef {
            app: AppId(7),
            index: 42,
        };
        assert_eq!(t.to_string(), "7.42");
        assert_eq!("7.42".parse::<TaskRef>().unwrap(), t);
    }

    #[test]
    fn malformed_task_refs_are_rejected() {
        for bad in ["7", "7.", ".3", "a.b", "7.-1", ""] {
            assert!(bad.parse::<TaskRef>().is_err(), "{bad} parsed");
        }
    }
}
