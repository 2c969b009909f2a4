//! Profiling of runs that shared a GPU: the mean runtime of each application's runs that
//! held a fraction of a device, per platform and per set of device co-runners (the
//! applications whose runs held fractions of the same device during it), and the slowdown
//! each set causes: the mean runtime with it over the mean runtime alone on a device. The
//! leases' second level on shared GPUs and `GET /v1/affinity` read it.

use super::profiling::Mean;
use crate::queue::PlatformSlowdowns;
use hetpilot_protocol::affinity_view::DeviceSlowdown;
use hetpilot_protocol::AppId;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Most rows an affinity view lists of device co-runner sets.
pub const MAX_DEVICE_ROWS: usize = 1024;

/// Runs per platform, application and sorted device co-runner set (empty: alone).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeviceRuns {
    runs: BTreeMap<(String, AppId, Vec<AppId>), Mean>,
}

impl DeviceRuns {
    /// One successful run of `app` on `platform` holding a fraction of a GPU, which shared
    /// its device with `co_runners` (none: it had the device alone).
    pub(crate) fn add(&mut self, app: AppId, platform: &str, co_runners: &[AppId], wall_s: f64) {
        if !(wall_s.is_finite() && wall_s > 0.0) {
            return;
        }
        let mut set = co_runners.to_vec();
        set.sort();
        set.dedup();
        self.runs
            .entry((platform.to_string(), app, set))
            .or_default()
            .add(wall_s);
    }

    /// Drops what was measured of `apps` (they were forgotten), the sets they were in too.
    pub(crate) fn forget(&mut self, apps: &HashSet<AppId>) {
        self.runs
            .retain(|(_, a, set), _| !apps.contains(a) && !set.iter().any(|c| apps.contains(c)));
    }

    /// Mean runtime of `app` alone on a device of `platform`.
    fn alone(&self, platform: &str, app: AppId) -> Option<f64> {
        self.runs
            .get(&(platform.to_string(), app, Vec::new()))
            .and_then(Mean::get)
    }

    /// Every measured set of `apps` (all when `None`), with its slowdown where `app` was
    /// also measured alone there; at most [`MAX_DEVICE_ROWS`], by platform, application
    /// and set.
    pub(crate) fn rows(&self, apps: Option<&HashSet<AppId>>) -> Vec<DeviceSlowdown> {
        self.runs
            .iter()
            .filter(|((_, app, _), _)| apps.is_none_or(|keep| keep.contains(app)))
            .filter_map(|((platform, app, set), mean)| {
                let runtime_s = mean.get()?;
                let alone_s = self.alone(platform, *app);
                Some(DeviceSlowdown {
                    app: *app,
                    platform: platform.clone(),
                    co_runners: set.clone(),
                    runtime_s,
                    samples: mean.n,
                    alone_s,
                    slowdown: alone_s.map(|a| runtime_s / a).filter(|s| s.is_finite()),
                })
            })
            .take(MAX_DEVICE_ROWS)
            .collect()
    }

    /// The measured slowdowns by platform, 1 for the empty set of an application measured
    /// alone: what the second level on shared GPUs reads.
    pub(crate) fn slowdowns(&self) -> HashMap<String, PlatformSlowdowns> {
        let mut out: HashMap<String, PlatformSlowdowns> = HashMap::new();
        for row in self.rows(None) {
            if let Some(s) = row.slowdown {
                out.entry(row.platform)
                    .or_default()
                    .insert((row.app, row.co_runners), s);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slowdown_is_the_runtime_with_a_set_over_the_runtime_alone() {
        let mut d = DeviceRuns::default();
        let (a, b) = (AppId(1), AppId(2));
        d.add(a, "gpu", &[], 10.0);
        d.add(a, "gpu", &[], 20.0);
        d.add(a, "gpu", &[b, b], 45.0);
        d.add(b, "gpu", &[a], 7.0); // b never ran alone: no slowdown
        d.add(a, "gpu", &[b], f64::NAN); // not a duration: left out
        let rows = d.rows(None);
        assert_eq!(rows.len(), 3, "{rows:?}");
        let with_b = rows
            .iter()
            .find(|r| r.app == a && r.co_runners == [b])
            .unwrap();
        assert_eq!((with_b.runtime_s, with_b.samples), (45.0, 1));
        assert_eq!(with_b.alone_s, Some(15.0));
        assert_eq!(with_b.slowdown, Some(3.0));
        let b_row = rows.iter().find(|r| r.app == b).unwrap();
        assert_eq!(b_row.slowdown, None);
        let table = d.slowdowns();
        assert_eq!(table["gpu"].get(&(a, vec![b])), Some(&3.0));
        assert_eq!(table["gpu"].get(&(a, vec![])), Some(&1.0));
        assert_eq!(table["gpu"].len(), 2, "ratios not measured stay out");
        assert_eq!(d.rows(Some(&HashSet::from([b]))).len(), 1);
        d.forget(&HashSet::from([b]));
        assert_eq!(d.rows(None).len(), 1, "sets naming a forgotten app go too");
    }
}
