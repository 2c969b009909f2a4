//! The manager's online affinity profile as `GET /v1/affinity` returns it, read by the
//! dashboard and `hetpilot affinity --live`: the two-level paper's Table 3 (throughput,
//! egocentric and reciprocal platform affinity) and Table 4 (co-runner affinity) computed
//! from the runtimes measured so far, with how many runs each cell rests on.

use crate::AppId;
use serde::{Deserialize, Serialize};

/// The affinity tables of the applications in the manager that are unfinished or have
/// measured runs (the newest 64), over the platforms that have agents or measured runs.
/// Every matrix is indexed `[app][platform]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AffinityView {
    /// The applications (rows).
    pub apps: Vec<AffinityApp>,
    /// The platforms (columns).
    pub platforms: Vec<String>,
    /// Tasks per hour, as Table 3 counts them.
    pub throughput: Vec<Vec<f64>>,
    /// Egocentric platform affinity (EPA); unitless.
    pub egocentric: Vec<Vec<f64>>,
    /// Reciprocal platform affinity (RPA); unitless.
    pub reciprocal: Vec<Vec<f64>>,
    /// Co-runner affinity, raw difference in seconds; `None` where no co-runner set of
    /// the pair was measured.
    pub raw_difference: Vec<Vec<Option<f64>>>,
    /// Co-runner affinity, normalized difference in percent.
    pub normalized_difference: Vec<Vec<Option<f64>>>,
    /// Mean runtime of one task (measured, or the prior when `samples` is 0), seconds.
    pub runtime_s: Vec<Vec<f64>>,
    /// Successful runs measured; 0 means the cell is the prior, not a measurement.
    pub samples: Vec<Vec<u64>>,
    /// Half-width of the 95% confidence interval of the measured mean runtime, relative
    /// to it (0.1: ±10%); `None` below two runs.
    #[serde(default)]
    pub ci95: Vec<Vec<Option<f64>>>,
    /// Fairness (1 − σ/μ of the throughputs normalized to Fastest-OneCore) of the last
    /// round's allocation; `None` before a round has run.
    pub fairness: Option<f64>,
    /// Runs that held a fraction of a GPU, per application, platform and set of device
    /// co-runners, with the slowdown each set causes.
    #[serde(default)]
    pub device_slowdown: Vec<DeviceSlowdown>,
}

/// How an application's runs holding a fraction of a GPU fared next to one set of device
/// co-runners (the applications whose runs held fractions of the same device).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeviceSlowdown {
    /// The application.
    pub app: AppId,
    /// The platform its runs ran on.
    pub platform: String,
    /// The device co-runners, sorted; empty for the runs that had their device alone.
    pub co_runners: Vec<AppId>,
    /// Mean runtime of its runs with that set, seconds.
    pub runtime_s: f64,
    /// Runs measured with that set.
    pub samples: u64,
    /// Mean runtime of its runs alone on a device of the platform, seconds; `None` while
    /// none was measured.
    pub alone_s: Option<f64>,
    /// `runtime_s / alone_s`: 1.5 means 50% slower next to that set.
    pub slowdown: Option<f64>,
}

/// One row of an [`AffinityView`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AffinityApp {
    /// The application.
    pub app: AppId,
    /// Its name, as submitted.
    pub name: String,
    /// The user who submitted it.
    pub owner: String,
}

impl AffinityView {
    /// Keeps only the rows `keep` accepts (a user sees only their own applications).
    pub fn retain_apps(&mut self, keep: impl Fn(&AffinityApp) -> bool) {
        let keep: Vec<bool> = self.apps.iter().map(keep).collect();
        fn filter<T>(rows: &mut Vec<T>, keep: &[bool]) {
            let mut i = 0;
            rows.retain(|_| {
                i += 1;
                keep.get(i - 1).copied().unwrap_or(false)
            });
        }
        filter(&mut self.apps, &keep);
        filter(&mut self.throughput, &keep);
        filter(&mut self.egocentric, &keep);
        filter(&mut self.reciprocal, &keep);
        filter(&mut self.raw_difference, &keep);
        filter(&mut self.normalized_difference, &keep);
        filter(&mut self.runtime_s, &keep);
        filter(&mut self.samples, &keep);
        filter(&mut self.ci95, &keep);
        let kept: Vec<AppId> = self.apps.iter().map(|a| a.app).collect();
        self.device_slowdown.retain(|d| kept.contains(&d.app));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retaining_keeps_rows_aligned() {
        let app = |i: u64, owner: &str| AffinityApp {
            app: AppId(i),
            name: format!("a{i}"),
            owner: owner.into(),
        };
        let mut v = AffinityView {
            apps: vec![app(1, "x"), app(2, "y"), app(3, "x")],
            platforms: vec!["p".into()],
            throughput: vec![vec![1.0], vec![2.0], vec![3.0]],
            egocentric: vec![vec![1.0], vec![2.0], vec![3.0]],
            reciprocal: vec![vec![1.0], vec![2.0], vec![3.0]],
            raw_difference: vec![vec![None], vec![Some(2.0)], vec![None]],
            normalized_difference: vec![vec![None], vec![Some(2.0)], vec![None]],
            runtime_s: vec![vec![1.0], vec![2.0], vec![3.0]],
            samples: vec![vec![1], vec![2], vec![3]],
            ci95: vec![vec![None], vec![Some(0.2)], vec![Some(0.3)]],
            fairness: Some(0.5),
            device_slowdown: [1, 2]
                .map(|a| DeviceSlowdown {
                    app: AppId(a),
                    platform: "p".into(),
                    co_runners: vec![AppId(3 - a)],
                    runtime_s: 2.0,
                    samples: 1,
                    alone_s: Some(1.0),
                    slowdown: Some(2.0),
                })
                .to_vec(),
        };
        v.retain_apps(|a| a.owner == "x");
        assert_eq!(v.apps.len(), 2);
        assert_eq!(v.throughput, vec![vec![1.0], vec![3.0]]);
        assert_eq!(v.samples, vec![vec![1], vec![3]]);
        assert_eq!(v.ci95, vec![vec![None], vec![Some(0.3)]]);
        assert_eq!(v.raw_difference, vec![vec![None], vec![None]]);
        let rows: Vec<AppId> = v.device_slowdown.iter().map(|d| d.app).collect();
        assert_eq!(rows, [AppId(1)], "another user's device rows go");
    }
}
