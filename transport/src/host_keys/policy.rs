//! [`HostKeyPolicy`]: what a connection does with a host that known_hosts does not list yet.

use std::str::FromStr;

/// What to do with a host whose key is not in known_hosts. A host listed with another key
/// is refused under both policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostKeyPolicy {
    /// Refuse it, like OpenSSH's `StrictHostKeyChecking yes` (and `ask` in batch mode).
    #[default]
    Strict,
    /// Trust its key on first contact and append it to known_hosts, like OpenSSH's
    /// `StrictHostKeyChecking accept-new`.
    AcceptNew,
}

impl HostKeyPolicy {
    /// The spelling used in profiles: `strict` or `accept-new`.
    pub fn name(self) -> &'static str {
        match self {
            HostKeyPolicy::Strict => "strict",
            HostKeyPolicy::AcceptNew => "accept-new",
        }
    }
}

/// A policy name that is neither `strict` nor `accept-new`.
#[derive(Debug, thiserror::Error)]
#[error("{0:?}: expected \"strict\" or \"accept-new\"")]
pub struct UnknownPolicy(pub String);

impl FromStr for HostKeyPolicy {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [HostKeyPolicy::Strict, HostKeyPolicy::AcceptNew]
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for policy in [HostKeyPolicy::Strict, HostKeyPolicy::AcceptNew] {
            assert_eq!(policy.name().parse::<HostKeyPolicy>().unwrap(), policy);
        }
        let err = "yes".parse::<HostKeyPolicy>().unwrap_err().to_string();
        assert!(
            err.contains("\"yes\"") && err.contains("accept-new"),
            "{err}"
        );
    }
}
