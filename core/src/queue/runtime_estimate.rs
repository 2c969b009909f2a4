//! How long the queues expect a run to last, for backfilling around reservations: the
//! task's declared timeout (the agent kills it then, so a hard bound), or the mean of the
//! successful runs of its application on the agent's platform times a margin once enough
//! were measured; the smaller of the two when both are known. Neither: no estimate, and
//! such a run never backfills into slots a reservation needs.

use super::queues::Queues;
use hetpilot_protocol::AppId;
use std::collections::HashMap;

/// Successful runs of an application on a platform before their mean counts as an
/// estimate.
pub(crate) const MIN_MEASURED_RUNS: u64 = 3;

/// The measured mean is multiplied by this before it counts as a run's expected length.
pub(crate) const MEASURED_MARGIN: f64 = 2.0;

#[derive(Debug, Clone, Copy, Default)]
struct Mean {
    n: u64,
    sum_ms: f64,
}

/// Measured run lengths per application and platform.
#[derive(Debug, Default)]
pub(crate) struct RuntimeEstimates {
    apps: HashMap<AppId, HashMap<String, Mean>>,
}

impl RuntimeEstimates {
    /// One successful run of `app` on `platform` that lasted `wall_ms`; ignored when
    /// not a finite positive length.
    pub(crate) fn add(&mut self, app: AppId, platform: &str, wall_ms: f64) {
        if !(wall_ms.is_finite() && wall_ms > 0.0) {
            return;
        }
        let platforms = self.apps.entry(app).or_default();
        let mean = match platforms.get_mut(platform) {
            Some(m) => m,
            None => platforms.entry(platform.to_string()).or_default(),
        };
        mean.n = mean.n.saturating_add(1);
        mean.sum_ms += wall_ms;
    }

    /// Forgets what was measured of `app`.
    pub(crate) fn forget(&mut self, app: AppId) {
        self.apps.remove(&app);
    }

    /// How long a run of `app` on `platform` is expected to last, milliseconds, given its
    /// declared timeout; `None` without a timeout or enough measured runs.
    pub(crate) fn expected_ms(
        &self,
        app: AppId,
        platform: &str,
        timeout_secs: Option<u64>,
    ) -> Option<u64> {
        let declared = timeout_secs.map(|s| s.saturating_mul(1000));
        let measured = self
            .apps
            .get(&app)
            .and_then(|p| p.get(platform))
            .filter(|m| m.n >= MIN_MEASURED_RUNS)
            .map(|m| {
                let ms = (m.sum_ms / m.n as f64 * MEASURED_MARGIN).ceil();
                // Saturating float-to-integer conversion: a huge mean stays huge.
                ms as u64
            });
        match (declared, measured) {
            (Some(d), Some(m)) => Some(d.min(m)),
            (d, m) => d.or(m),
        }
    }
}

impl Queues {
    /// One successful run of `app` on `platform` that lasted `wall_ms` (a report, or a
    /// run the store recorded before a restart).
    pub(crate) fn note_runtime(&mut self, app: AppId, platform: &str, wall_ms: f64) {
        self.estimates.add(app, platform, wall_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_bounds_the_measured_estimate_and_few_runs_do_not_count() {
        let mut e = RuntimeEstimates::default();
        let a = AppId(1);
        assert_eq!(e.expected_ms(a, "p", None), None);
        assert_eq!(e.expected_ms(a, "p", Some(5)), Some(5000));
        e.add(a, "p", 100.0);
        e.add(a, "p", 300.0);
        assert_eq!(e.expected_ms(a, "p", None), None, "two runs are too few");
        e.add(a, "p", 200.0);
        e.add(a, "p", f64::NAN);
        e.add(a, "p", -1.0);
        assert_eq!(
            e.expected_ms(a, "p", None),
            Some(400),
            "mean 200 ms, margin 2"
        );
        assert_eq!(e.expected_ms(a, "p", Some(5)), Some(400));
        assert_eq!(e.expected_ms(a, "p", Some(0)), Some(0));
        assert_eq!(
            e.expected_ms(a, "other", None),
            None,
            "measured per platform"
        );
        assert_eq!(e.expected_ms(a, "p", Some(u64::MAX)), Some(400));
        e.forget(a);
        assert_eq!(e.expected_ms(a, "p", None), None);
    }
}
