//! `[fairshare]`: whether and how the live manager weights users by fairshare priority.

use crate::fairshare::Penalty;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[fairshare]` in the configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FairshareConfig {
    /// Weight users by fairshare priority (false: equal weights; usage is still counted).
    pub(crate) enabled: bool,
    /// Charges halve every this many hours (0: no decay).
    pub(crate) half_life_hours: f64,
    /// Penalty function P(j): `multi-resource`, `cpu` or `processor-equivalent`.
    pub(crate) penalty: Penalty,
    /// Per-user shares (`[fairshare.shares] alice = 2.0`); users not listed have 1. A
    /// user's first-level weight is their share × their fairshare factor.
    pub(crate) shares: BTreeMap<String, f64>,
}

impl Default for FairshareConfig {
    fn default() -> Self {
        FairshareConfig {
            enabled: true,
            half_life_hours: 168.0,
            penalty: Penalty::MultiResource,
            shares: BTreeMap::new(),
        }
    }
}

impl FairshareConfig {
    /// The first problem with these values, in words that name the accepted ones (the
    /// penalty's name was checked as the configuration was read).
    pub fn problem(&self) -> Option<String> {
        if !(self.half_life_hours.is_finite() && self.half_life_hours >= 0.0) {
            return Some(format!(
                "half_life_hours must be a number of hours >= 0, got {}",
                self.half_life_hours
            ));
        }
        if let Some((user, share)) = self
            .shares
            .iter()
            .find(|(_, s)| !(s.is_finite() && **s > 0.0))
        {
            return Some(format!(
                "shares: the share of `{user}` must be a positive number, got {share}"
            ));
        }
        None
    }
}
