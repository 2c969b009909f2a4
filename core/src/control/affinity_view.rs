//! What the dashboard and `hetpilot affinity --live` show of the online profile: the
//! affinity tables (two-level paper, Section 4, Tables 3 and 4) over the live
//! measurements, and the fairness of the last round's allocation (Section 3:
//! 1 − σ/μ of the throughputs normalized to Fastest-OneCore). The measurements are copied
//! under the control lock ([`Control::affinity_job`]) and the tables computed off it
//! ([`AffinityJob::compute`]), so a dashboard never holds up a lease.

use super::profiling::{RoundPlatform, RunStats};
use super::Control;
use crate::queue::AgentState;
use crate::sched::metrics::fairness_index;
use crate::sched::{AffinityTables, RuntimeProfileError};
use hetpilot_protocol::affinity_view::{AffinityApp, AffinityView};
use hetpilot_protocol::views::ScheduleView;
use std::collections::BTreeMap;

/// Most applications an affinity view covers (the most recently submitted ones still
/// running or measured): co-runner affinity grows with the square of the rows.
pub const MAX_AFFINITY_APPS: usize = 64;

/// A copy of what an affinity view reads.
pub struct AffinityJob {
    stats: RunStats,
    apps: Vec<AffinityApp>,
    platforms: Vec<RoundPlatform>,
    fairness: Option<f64>,
}

impl Control {
    /// Copies the measurements, the applications not cancelled that are unfinished or
    /// have measured runs (at most [`MAX_AFFINITY_APPS`], the newest) and the platforms
    /// with active agents or measured runs (a node's slots: the mean of its agents', else 1).
    pub fn affinity_job(&self) -> AffinityJob {
        let stats = &self.policy.stats;
        let measured = |app| stats.platforms().any(|p| stats.samples(app, p) > 0);
        let mut apps: Vec<(u64, AffinityApp)> = self
            .queues
            .apps()
            .filter(|a| !a.cancelled)
            .filter(|a| a.counts.finished() < a.counts.total() || measured(a.id))
            .map(|a| {
                (
                    a.submitted_ms,
                    AffinityApp {
                        app: a.id,
                        name: a.runtime.name.clone(),
                        owner: a.owner.clone(),
                    },
                )
            })
            .collect();
        apps.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.app.cmp(&y.1.app)));
        apps.truncate(MAX_AFFINITY_APPS);
        let mut apps: Vec<AffinityApp> = apps.into_iter().map(|(_, a)| a).collect();
        apps.sort_by_key(|a| a.app);
        let mut slots: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for a in self
            .queues
            .agents()
            .filter(|a| a.state == AgentState::Active)
        {
            let e = slots.entry(a.platform.clone()).or_default();
            e.0 += u64::from(a.slots);
            e.1 += 1;
        }
        let stats = stats.clone();
        for p in stats.platforms() {
            slots.entry(p.to_string()).or_insert((1, 1));
        }
        let platforms = slots
            .into_iter()
            .map(|(name, (s, n))| RoundPlatform {
                name,
                cores_per_node: ((s + n / 2) / n.max(1)).clamp(1, u64::from(u32::MAX)) as u32,
            })
            .collect();
        AffinityJob {
            stats,
            apps,
            platforms,
            fairness: allocation_fairness(self.schedule_view()),
        }
    }
}

impl AffinityJob {
    /// The tables over the copied measurements.
    pub fn compute(self) -> Result<AffinityView, RuntimeProfileError> {
        let mut view = AffinityView {
            platforms: self.platforms.iter().map(|p| p.name.clone()).collect(),
            fairness: self.fairness,
            ..Default::default()
        };
        if self.apps.is_empty() || self.platforms.is_empty() {
            view.apps = self.apps;
            return Ok(view);
        }
        let ids: Vec<_> = self.apps.iter().map(|a| a.app).collect();
        let live = self.stats.profile(&ids, &self.platforms)?;
        let tables = AffinityTables::of(&live.profile);
        view.runtime_s = (0..ids.len())
            .map(|i| {
                (0..self.platforms.len())
                    .map(|j| live.profile.one_core(i, j))
                    .collect()
            })
            .collect();
        view.ci95 = ids
            .iter()
            .map(|&a| {
                self.platforms
                    .iter()
                    .map(|p| self.stats.relative_ci95(a, &p.name))
                    .collect()
            })
            .collect();
        view.apps = self.apps;
        view.samples = live.samples;
        view.throughput = tables.throughput;
        view.egocentric = tables.egocentric;
        view.reciprocal = tables.reciprocal;
        view.raw_difference = tables.raw_difference;
        view.normalized_difference = tables.normalized_difference;
        let shown: std::collections::HashSet<_> = ids.iter().copied().collect();
        view.device_slowdown = self.stats.devices.rows(Some(&shown));
        Ok(view)
    }
}

/// Fairness of an allocation (two-level paper, Section 3): each application's
/// throughput Σ_p cores(a, p) / runtime(a, p), normalized by its Fastest-OneCore
/// throughput (a fair share, Σ slots / #apps, of cores on its fastest platform), then
/// 1 − σ/μ over the applications. `None` before a round or without slots.
pub fn allocation_fairness(view: &ScheduleView) -> Option<f64> {
    let slots: u64 = view.platforms.iter().map(|p| p.slots).sum();
    if view.at_ms == 0 || view.apps.is_empty() || slots == 0 {
        return None;
    }
    let fair_share = slots as f64 / view.apps.len() as f64;
    let normalized: Vec<f64> = view
        .apps
        .iter()
        .map(|a| {
            let pairs = a.cores.iter().zip(&a.runtime_s);
            let valid = |r: &f64| r.is_finite() && *r > 0.0;
            let achieved: f64 = pairs
                .clone()
                .filter(|(_, r)| valid(r))
                .map(|(c, r)| f64::from(*c) / r)
                .sum();
            let fastest = pairs
                .map(|(_, r)| *r)
                .filter(valid)
                .fold(f64::INFINITY, f64::min);
            if fastest.is_finite() {
                achieved / (fair_share / fastest)
            } else {
                0.0
            }
        })
        .collect();
    Some(fairness_index(&normalized))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_protocol::views::{AppAllocation, PlatformView};
    use hetpilot_protocol::AppId;

    fn alloc(app: u64, cores: Vec<u32>, runtime_s: Vec<f64>) -> AppAllocation {
        AppAllocation {
            app: AppId(app),
            name: format!("a{app}"),
            owner: "u".into(),
            weight: 1.0,
            samples: vec![0; cores.len()],
            cores,
            runtime_s,
            placed_on: None,
        }
    }

    fn view(apps: Vec<AppAllocation>) -> ScheduleView {
        ScheduleView {
            variants: Vec::new(),
            policy: "x".into(),
            at_ms: 1,
            round: 1,
            effective_ms: 2,
            platforms: ["fast", "slow"]
                .iter()
                .map(|n| PlatformView {
                    name: n.to_string(),
                    agents: 1,
                    slots: 4,
                    speed: 1.0,
                })
                .collect(),
            apps,
        }
    }

    #[test]
    fn an_even_split_of_equal_apps_is_fair_and_a_starved_app_is_not() {
        // Two identical applications, 4 cores each out of 8: both at their fair share.
        let even = view(vec![
            alloc(1, vec![2, 2], vec![1.0, 2.0]),
            alloc(2, vec![2, 2], vec![1.0, 2.0]),
        ]);
        assert_eq!(allocation_fairness(&even), Some(1.0));
        // One gets everything: normalized throughputs 0 and x, σ = μ, fairness 0.
        let starved = view(vec![
            alloc(1, vec![4, 4], vec![1.0, 2.0]),
            alloc(2, vec![0, 0], vec![1.0, 2.0]),
        ]);
        let f = allocation_fairness(&starved).unwrap();
        assert!(f.abs() < 1e-12, "{f}");
        assert_eq!(allocation_fairness(&ScheduleView::default()), None);
    }

    #[test]
    fn the_confidence_interval_follows_the_spread_of_the_runs() {
        let mut stats = RunStats::default();
        // Runs of 1 s and 3 s: mean 2, s = sqrt(4/3) (n = 4), half-width 1.96 s / 2.
        for w in [1.0, 3.0, 1.0, 3.0] {
            stats.add(AppId(1), "p", &[], w);
        }
        let want = 1.96 * (4.0f64 / 3.0).sqrt() / 2.0 / 2.0;
        let got = stats.relative_ci95(AppId(1), "p").unwrap();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        assert_eq!(stats.relative_ci95(AppId(2), "p"), None);
    }

    #[test]
    fn tables_rest_on_the_measured_runs() {
        let mut stats = RunStats::default();
        for _ in 0..3 {
            stats.add(AppId(1), "fast", &[], 1.0);
            stats.add(AppId(1), "slow", &[], 4.0);
        }
        stats.add(AppId(2), "fast", &[], 2.0);
        let app = |i: u64| AffinityApp {
            app: AppId(i),
            name: format!("a{i}"),
            owner: "u".into(),
        };
        let platform = |n: &str| RoundPlatform {
            name: n.into(),
            cores_per_node: 2,
        };
        let job = AffinityJob {
            stats,
            apps: vec![app(1), app(2)],
            platforms: vec![platform("fast"), platform("slow")],
            fairness: None,
        };
        let v = job.compute().unwrap();
        assert_eq!(v.samples, vec![vec![3, 3], vec![1, 0]]);
        // Identical runs: a confidence half-width of 0; one run or none: no interval.
        assert_eq!(v.ci95, vec![vec![Some(0.0), Some(0.0)], vec![None, None]]);
        assert_eq!(v.runtime_s[0], vec![1.0, 4.0]);
        // App 2 was never run on `slow`: the prior scales it by the platform's slowness (4).
        assert!((v.runtime_s[1][1] - 8.0).abs() < 1e-9, "{:?}", v.runtime_s);
        // Four times faster on `fast`: four times the throughput there.
        let t = &v.throughput[0];
        assert!((t[0] / t[1] - 4.0).abs() < 1e-9, "{t:?}");
        assert_eq!(v.egocentric.len(), 2);
        assert_eq!(v.reciprocal[0].len(), 2);
    }
}
