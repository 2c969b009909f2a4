//! Online profiling: mean task runtimes per application × platform and per application ×
//! platform × co-runner set, fed by task reports and rebuilt from the store's attempts at
//! start-up, and the [`RuntimeProfile`] a scheduling round reads.
//!
//! Pairs not measured yet get a prior from a multiplicative model, runtime(a, p) ≈
//! work(a) × slowness(p). slowness(p) is the geometric mean of runtime(a, p) / g(a) over
//! the applications measured on p and on some other platform (g(a): a's geometric mean
//! over its measured platforms; 1 when there is no such application); work(a) is the
//! geometric mean of runtime(a, q) / slowness(q) over a's measured platforms q. So an
//! application measured elsewhere is scaled by the platform's speed, and one measured
//! nowhere gets the mean work of the others. Exploration (every application gets a few
//! tasks on every platform) is the lease plan's job.
//!
//! The OneCore column of the live profile is the mean runtime of one slot's task as the
//! platform really ran it (whatever co-runners it had): agents' slots need not be cores, so
//! that is what a slot of the platform is worth to the application.

use crate::sched::profile::{
    ApplicationProfile, CombinationSpec, ProfiledPlatform, RuntimeDistribution,
};
use crate::sched::{RuntimeProfile, RuntimeProfileError};
use hetpilot_protocol::AppId;
use std::collections::HashMap;

/// Runtime used for an application measured nowhere while nothing is measured at all.
const DEFAULT_RUNTIME_S: f64 = 1.0;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Mean {
    pub(crate) n: u64,
    sum_s: f64,
    /// Sum of squares, for the confidence of the mean.
    sum_sq_s: f64,
}

impl Mean {
    pub(crate) fn add(&mut self, seconds: f64) {
        self.n += 1;
        self.sum_s += seconds;
        self.sum_sq_s += seconds * seconds;
    }

    pub(crate) fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_s / self.n as f64)
    }

    /// Half-width of the mean's 95% confidence interval (normal approximation,
    /// 1.96 · s / √n with the sample standard deviation s) relative to the mean; `None`
    /// below two runs.
    fn relative_ci95(&self) -> Option<f64> {
        let mean = self.get().filter(|m| *m > 0.0 && self.n >= 2)?;
        let n = self.n as f64;
        let var = ((self.sum_sq_s - n * mean * mean) / (n - 1.0)).max(0.0);
        Some(1.96 * (var / n).sqrt() / mean)
    }
}

/// What was measured on one platform.
#[derive(Debug, Clone, Default)]
struct PlatformRuns {
    /// Every successful run of each application.
    apps: HashMap<AppId, Mean>,
    /// Sorted member set (the application and its co-runners) → runs of each member.
    sets: HashMap<Vec<AppId>, HashMap<AppId, Mean>>,
}

/// Runtime statistics of successful runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunStats {
    platforms: HashMap<String, PlatformRuns>,
    /// Successful runs per (application, platform, variant name), for applications with
    /// variants.
    variants: HashMap<(AppId, String, String), Mean>,
    /// Successful runs that held a fraction of a GPU, per device co-runner set.
    pub(crate) devices: super::device_profile::DeviceRuns,
}

/// A platform of a scheduling round: its name and the slots of one of its nodes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoundPlatform {
    pub(crate) name: String,
    pub(crate) cores_per_node: u32,
}

/// The profile of one round, in the order of the round's applications and platforms.
#[derive(Debug)]
pub(crate) struct LiveProfile {
    pub(crate) profile: RuntimeProfile,
    /// Relative speed of each platform (1 / slowness; 1 for the reference).
    pub(crate) speed: Vec<f64>,
    /// Successful runs measured per `[application][platform]`.
    pub(crate) samples: Vec<Vec<u64>>,
    /// Mean seconds of one task per `[application][platform]`: measured, else the prior.
    pub(crate) runtime_s: Vec<Vec<f64>>,
}

fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = values.fold((0usize, 0.0), |(n, s), v| (n + 1, s + v.ln()));
    (n > 0).then(|| (sum / n as f64).exp())
}

impl RunStats {
    /// One successful run of `app` on `platform` that shared its node with `co_runners`.
    pub(crate) fn add(&mut self, app: AppId, platform: &str, co_runners: &[AppId], wall_s: f64) {
        if !(wall_s.is_finite() && wall_s > 0.0) {
            return;
        }
        let runs = match self.platforms.get_mut(platform) {
            Some(r) => r,
            None => self.platforms.entry(platform.to_string()).or_default(),
        };
        runs.apps.entry(app).or_default().add(wall_s);
        let mut members: Vec<AppId> = co_runners.to_vec();
        members.push(app);
        members.sort();
        members.dedup();
        runs.sets
            .entry(members)
            .or_default()
            .entry(app)
            .or_default()
            .add(wall_s);
    }

    /// One successful run of `app` on `platform` as its variant `variant`.
    pub(crate) fn add_variant(&mut self, app: AppId, platform: &str, variant: &str, wall_s: f64) {
        if !(wall_s.is_finite() && wall_s > 0.0) {
            return;
        }
        self.variants
            .entry((app, platform.to_string(), variant.to_string()))
            .or_default()
            .add(wall_s);
    }

    /// Mean runtime and count of `app`'s successful runs as `variant` on `platform`.
    pub(crate) fn variant_mean(
        &self,
        app: AppId,
        platform: &str,
        variant: &str,
    ) -> (Option<f64>, u64) {
        self.variants
            .get(&(app, platform.to_string(), variant.to_string()))
            .map_or((None, 0), |m| (m.get(), m.n))
    }

    /// Mean seconds of each `(application, variant)` of `keys` on each of `platforms`:
    /// the measured mean where it ran, else the module's prior with the (application,
    /// variant) as the application: its work (measured elsewhere, over the platforms'
    /// slowness) times the platform's slowness, or, measured nowhere, the mean work of the
    /// variants measured anywhere. `None` where nothing of any variant is measured yet.
    pub(crate) fn variant_runtimes(
        &self,
        keys: &[(AppId, &str)],
        platforms: &[&str],
    ) -> Vec<Vec<Option<f64>>> {
        let slowness = self.slowness();
        let slow = |p: &str| slowness.get(p).copied().unwrap_or(1.0);
        let mut by_key: HashMap<(AppId, &str), Vec<f64>> = HashMap::new();
        for ((app, platform, variant), m) in &self.variants {
            if let Some(mean) = m.get() {
                by_key
                    .entry((*app, variant.as_str()))
                    .or_default()
                    .push(mean / slow(platform));
            }
        }
        let work: HashMap<(AppId, &str), f64> = by_key
            .into_iter()
            .filter_map(|(k, v)| Some((k, geomean(v.into_iter())?)))
            .collect();
        let mean_work = geomean(work.values().copied());
        keys.iter()
            .map(|&(app, variant)| {
                platforms
                    .iter()
                    .map(|&p| {
                        self.variant_mean(app, p, variant).0.or_else(|| {
                            Some(work.get(&(app, variant)).copied().or(mean_work)? * slow(p))
                        })
                    })
                    .collect()
            })
            .collect()
    }

    /// Drops what was measured of `apps` (they were forgotten): their means and the
    /// co-runner sets they belonged to.
    pub(crate) fn forget(&mut self, apps: &std::collections::HashSet<AppId>) {
        self.variants.retain(|(a, _, _), _| !apps.contains(a));
        self.devices.forget(apps);
        for runs in self.platforms.values_mut() {
            runs.apps.retain(|a, _| !apps.contains(a));
            runs.sets
                .retain(|members, _| !members.iter().any(|a| apps.contains(a)));
        }
    }

    /// Successful runs of `app` measured on `platform`.
    pub(crate) fn samples(&self, app: AppId, platform: &str) -> u64 {
        self.platforms
            .get(platform)
            .and_then(|r| r.apps.get(&app))
            .map_or(0, |m| m.n)
    }

    /// The platforms with measured runs.
    pub(crate) fn platforms(&self) -> impl Iterator<Item = &str> {
        self.platforms.keys().map(String::as_str)
    }

    /// The relative 95% confidence half-width of `app`'s mean runtime on `platform`.
    pub(crate) fn relative_ci95(&self, app: AppId, platform: &str) -> Option<f64> {
        self.platforms
            .get(platform)?
            .apps
            .get(&app)?
            .relative_ci95()
    }

    /// Mean runtime of `app`'s successful runs on `platform`, seconds.
    pub(crate) fn mean(&self, app: AppId, platform: &str) -> Option<f64> {
        self.platforms.get(platform)?.apps.get(&app)?.get()
    }

    /// slowness(p) of every measured platform (module documentation).
    fn slowness(&self) -> HashMap<&str, f64> {
        let mut by_app: HashMap<AppId, Vec<f64>> = HashMap::new();
        for runs in self.platforms.values() {
            for (app, m) in &runs.apps {
                by_app.entry(*app).or_default().extend(m.get());
            }
        }
        // Only applications measured on two platforms or more say how platforms compare.
        let g: HashMap<AppId, f64> = by_app
            .into_iter()
            .filter(|(_, v)| v.len() >= 2)
            .filter_map(|(a, v)| Some((a, geomean(v.into_iter())?)))
            .collect();
        self.platforms
            .iter()
            .filter_map(|(name, runs)| {
                let s = geomean(
                    runs.apps
                        .iter()
                        .filter_map(|(a, m)| Some(m.get()? / g.get(a)?)),
                )?;
                Some((name.as_str(), s))
            })
            .collect()
    }

    /// The runtime profile of `apps` on `platforms`: measured means where there are any,
    /// the prior elsewhere, and every measured co-runner set that fits a node evenly.
    pub(crate) fn profile(
        &self,
        apps: &[AppId],
        platforms: &[RoundPlatform],
    ) -> Result<LiveProfile, RuntimeProfileError> {
        let slowness = self.slowness();
        let slow = |p: &str| slowness.get(p).copied().unwrap_or(1.0);
        let work: Vec<Option<f64>> = apps
            .iter()
            .map(|&a| {
                geomean(
                    self.platforms
                        .iter()
                        .filter_map(|(p, runs)| Some(runs.apps.get(&a)?.get()? / slow(p))),
                )
            })
            .collect();
        let mean_work = geomean(work.iter().flatten().copied()).unwrap_or(DEFAULT_RUNTIME_S);
        // runtime(a, p) = measured mean, else work(a) × slowness(p).
        let estimate = |i: usize, p: &str| {
            self.mean(apps[i], p)
                .unwrap_or_else(|| work[i].unwrap_or(mean_work) * slow(p))
        };
        let one_core: Vec<Vec<f64>> = (0..apps.len())
            .map(|i| platforms.iter().map(|p| estimate(i, &p.name)).collect())
            .collect();
        let samples = apps
            .iter()
            .map(|&a| platforms.iter().map(|p| self.samples(a, &p.name)).collect())
            .collect();
        let index: HashMap<AppId, usize> = apps.iter().enumerate().map(|(i, a)| (*a, i)).collect();
        let mut combinations = Vec::new();
        for (j, p) in platforms.iter().enumerate() {
            let Some(runs) = self.platforms.get(&p.name) else {
                continue;
            };
            for (members, by_member) in &runs.sets {
                let size = members.len() as u32;
                let fits = size <= p.cores_per_node && p.cores_per_node % size == 0;
                if !fits || !members.iter().all(|m| index.contains_key(m)) {
                    continue;
                }
                let runtimes = members
                    .iter()
                    .map(|m| {
                        let i = index[m];
                        let r = by_member.get(m).and_then(Mean::get);
                        (i, r.unwrap_or_else(|| estimate(i, &p.name)))
                    })
                    .collect();
                combinations.push(CombinationSpec {
                    platform: j,
                    runtimes,
                });
            }
        }
        let profile = RuntimeProfile::new(
            "<live measurements>",
            apps.iter()
                .map(|a| ApplicationProfile {
                    name: a.to_string(),
                    distribution: RuntimeDistribution::Constant,
                })
                .collect(),
            platforms
                .iter()
                .map(|p| ProfiledPlatform {
                    name: p.name.clone(),
                    cores_per_node: p.cores_per_node,
                    max_nodes: None,
                })
                .collect(),
            one_core.clone(),
            combinations,
        )?;
        Ok(LiveProfile {
            profile,
            speed: platforms.iter().map(|p| 1.0 / slow(&p.name)).collect(),
            samples,
            runtime_s: one_core,
        })
    }

    /// Relative speed (1 / slowness) of every platform measured so far.
    pub(crate) fn speeds(&self) -> HashMap<String, f64> {
        self.slowness()
            .into_iter()
            .map(|(p, s)| (p.to_string(), 1.0 / s))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platform(name: &str, cores: u32) -> RoundPlatform {
        RoundPlatform {
            name: name.into(),
            cores_per_node: cores,
        }
    }

    #[test]
    fn measured_means_and_priors_scaled_by_platform_speed() {
        let mut s = RunStats::default();
        let (a, b, c) = (AppId(1), AppId(2), AppId(3));
        // Platform "slow" takes twice as long as "fast" for a; b was only seen on fast.
        s.add(a, "fast", &[], 10.0);
        s.add(a, "fast", &[], 30.0);
        s.add(a, "slow", &[], 40.0);
        s.add(b, "fast", &[b], 5.0);
        let p = s
            .profile(&[a, b, c], &[platform("fast", 2), platform("slow", 2)])
            .unwrap();
        assert_eq!(p.profile.one_core(0, 0), 20.0);
        assert_eq!(p.profile.one_core(0, 1), 40.0);
        let ratio = p.profile.one_core(1, 1) / p.profile.one_core(1, 0);
        assert!(
            (ratio - 2.0).abs() < 1e-9,
            "b inherits slow's factor: {ratio}"
        );
        assert_eq!(p.samples, vec![vec![2, 1], vec![1, 0], vec![0, 0]]);
        assert!((p.speed[0] / p.speed[1] - 2.0).abs() < 1e-9);
        // c was never measured: it gets the others' mean work, scaled the same way.
        let c_ratio = p.profile.one_core(2, 1) / p.profile.one_core(2, 0);
        assert!((c_ratio - 2.0).abs() < 1e-9);
        // {b} ran on fast with its own tasks only: an AllCore combination.
        assert_eq!(p.profile.combination(0, &[1]).unwrap().runtimes, vec![5.0]);
    }

    #[test]
    fn co_runner_sets_that_do_not_split_a_node_are_left_out() {
        let mut s = RunStats::default();
        let (a, b, c) = (AppId(1), AppId(2), AppId(3));
        s.add(a, "p", &[b, c], 9.0);
        s.add(a, "p", &[b], 6.0);
        let p = s.profile(&[a, b, c], &[platform("p", 4)]).unwrap();
        assert!(p.profile.combination(0, &[0, 1, 2]).is_none(), "3 ∤ 4");
        let pair = p.profile.combination(0, &[0, 1]).unwrap();
        assert_eq!(pair.runtime_of(0), Some(6.0));
        // b was not measured in that set: its estimate stands in.
        assert_eq!(pair.runtime_of(1), Some(p.profile.one_core(1, 0)));
        assert_eq!(s.samples(a, "p"), 2);
        assert_eq!(s.samples(a, "q"), 0);
    }
}
