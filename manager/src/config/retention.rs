//! `[retention]`: how long the manager keeps applications after they ended (finished,
//! failed or cancelled). A periodic sweep forgets older ones: they leave memory and the
//! database, so what users submit and cancel cannot pile up for ever.

use serde::Deserialize;
use std::time::Duration;

/// The longest retention that may be configured: 100 years, i.e. for ever.
const MAX_DAYS: f64 = 36_500.0;
const DAY_MS: f64 = 86_400_000.0;

/// `[retention]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Days an application is kept once it ended (default 30; fractions allowed).
    pub ended_app_days: f64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            ended_app_days: 30.0,
        }
    }
}

impl RetentionConfig {
    /// What makes no sense in it, as (field, problem).
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let days = self.ended_app_days;
        if !(days.is_finite() && days > 0.0 && days <= MAX_DAYS) {
            return Some((
                "retention.ended_app_days",
                format!(
                    "{days} is not a number of days in (0, {MAX_DAYS}] (to forget ended \
                     applications at once, run `hetpilot purge --older-than 0s`)"
                ),
            ));
        }
        None
    }

    /// How long an ended application is kept, milliseconds (the setting was checked).
    pub fn ended_app_age_ms(&self) -> u64 {
        (self.ended_app_days.clamp(0.0, MAX_DAYS) * DAY_MS) as u64
    }

    /// How often the sweep looks for applications past the retention: a tenth of it,
    /// between a minute and an hour.
    pub fn sweep_period(&self) -> Duration {
        Duration::from_millis(self.ended_app_age_ms() / 10)
            .clamp(Duration::from_secs(60), Duration::from_secs(3600))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_must_be_a_positive_finite_number_of_days() {
        let days = |d| RetentionConfig { ended_app_days: d };
        assert!(days(30.0).problem().is_none());
        assert_eq!(days(0.5).ended_app_age_ms(), 43_200_000);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300, MAX_DAYS + 1.0] {
            let (field, problem) = days(bad).problem().expect("refused");
            assert_eq!(field, "retention.ended_app_days");
            assert!(problem.contains("days"), "{problem}");
        }
        assert_eq!(days(1e-9).sweep_period(), Duration::from_secs(60));
        assert_eq!(days(MAX_DAYS).sweep_period(), Duration::from_secs(3600));
    }
}
