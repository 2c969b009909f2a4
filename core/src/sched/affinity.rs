//! Platform affinity (Section 4.1: Throughput, EPA, RPA) and co-runner affinity
//! (Section 4.2: raw and normalized difference) computed from a [`RuntimeProfile`].
//!
//! A higher platform affinity means running application K on platform P is more
//! beneficial; a higher co-runner affinity means K suffers more from co-runners on P.

use super::profile::{Combination, RuntimeProfile};

hetpilot_protocol::named_enum! {
    /// Which platform-affinity metric a first-level policy ranks platforms with.
    pub enum PlatformAffinity("platform affinity") {
        /// OneCore throughput in tasks per hour (3600 / runtime).
        Throughput = "throughput",
        /// Egocentric platform affinity: mean OneCore runtime of K on the other platforms
        /// over its runtime on P (Section 4.1, "suitability of P to K").
        Egocentric = "epa",
        /// Reciprocal platform affinity: the same ratio on runtimes first normalized by
        /// each platform's mean runtime over all applications (Section 4.1).
        Reciprocal = "rpa",
    }
}

hetpilot_protocol::named_enum! {
    /// Which co-runner-affinity metric MAF ranks applications with.
    pub enum CoRunnerAffinity("co-runner affinity") {
        /// Mean of C − S in seconds (Table 4, left).
        RawDifference = "raw",
        /// Mean of (C − S) / S × 100, in percent (Table 4, right).
        NormalizedDifference = "normalized",
    }
}

impl CoRunnerAffinity {
    /// The difference of one runtime `with` co-runners against the solo runtime `solo`.
    pub(crate) fn difference(self, with: f64, solo: f64) -> f64 {
        match self {
            Self::RawDifference => with - solo,
            Self::NormalizedDifference => (with - solo) / solo * 100.0,
        }
    }
}

/// Platform affinity of each of `apps` to each of `platforms` (indices into the
/// profile), as `result[a][p]` in the order given. Only the given applications and
/// platforms take part, as in Algorithm 1 line 6 (users with remaining tasks, platforms
/// with available cores). With a single platform EPA and RPA are 1 (no alternative).
pub(crate) fn platform_affinities(
    profile: &RuntimeProfile,
    apps: &[usize],
    platforms: &[usize],
    metric: PlatformAffinity,
) -> Vec<Vec<f64>> {
    let runtime = |a: usize, p: usize| profile.one_core(a, p);
    match metric {
        PlatformAffinity::Throughput => apps
            .iter()
            .map(|&a| platforms.iter().map(|&p| 3600.0 / runtime(a, p)).collect())
            .collect(),
        PlatformAffinity::Egocentric => apps
            .iter()
            .map(|&a| {
                let row: Vec<f64> = platforms.iter().map(|&p| runtime(a, p)).collect();
                leave_one_out_ratio(&row)
            })
            .collect(),
        PlatformAffinity::Reciprocal => {
            // Step 1: each platform's mean OneCore runtime over the applications.
            let means: Vec<f64> = platforms
                .iter()
                .map(|&p| apps.iter().map(|&a| runtime(a, p)).sum::<f64>() / apps.len() as f64)
                .collect();
            apps.iter()
                .map(|&a| {
                    let row: Vec<f64> = platforms
                        .iter()
                        .zip(&means)
                        .map(|(&p, mean)| runtime(a, p) / mean)
                        .collect();
                    leave_one_out_ratio(&row)
                })
                .collect()
        }
    }
}

/// Platform affinity over columns some applications cannot run on: `runtime[a][c]` is
/// application `a`'s mean task runtime on column `c` (seconds), `None` where it cannot run
/// there. The metrics are [`platform_affinities`]' over the columns each application can
/// run on (RPA's column means over the applications that can run there); a column an
/// application cannot run on gets affinity 0.
pub(crate) fn affinities_with_gaps(
    runtime: &[Vec<Option<f64>>],
    metric: PlatformAffinity,
) -> Vec<Vec<f64>> {
    let columns = runtime.first().map_or(0, Vec::len);
    let spread = |row: Vec<Option<f64>>| -> Vec<f64> {
        let known: Vec<f64> = row.iter().flatten().copied().collect();
        let mut ratios = leave_one_out_ratio(&known).into_iter();
        row.iter()
            .map(|r| r.and_then(|_| ratios.next()).unwrap_or(0.0))
            .collect()
    };
    match metric {
        PlatformAffinity::Throughput => runtime
            .iter()
            .map(|row| row.iter().map(|r| r.map_or(0.0, |r| 3600.0 / r)).collect())
            .collect(),
        PlatformAffinity::Egocentric => runtime.iter().map(|row| spread(row.clone())).collect(),
        PlatformAffinity::Reciprocal => {
            let means: Vec<f64> = (0..columns)
                .map(|c| {
                    let known: Vec<f64> = runtime.iter().filter_map(|row| row[c]).collect();
                    known.iter().sum::<f64>() / known.len().max(1) as f64
                })
                .collect();
            runtime
                .iter()
                .map(|row| {
                    spread(
                        row.iter()
                            .zip(&means)
                            .map(|(r, mean)| r.map(|r| r / mean))
                            .collect(),
                    )
                })
                .collect()
        }
    }
}

/// For each position P: mean of the other entries over the entry at P (EPA's formula).
fn leave_one_out_ratio(row: &[f64]) -> Vec<f64> {
    if row.len() < 2 {
        return vec![1.0; row.len()];
    }
    let total: f64 = row.iter().sum();
    let others = (row.len() - 1) as f64;
    row.iter().map(|&r| (total - r) / others / r).collect()
}

/// Co-runner affinity of `app` on `platform`: the mean difference (per `metric`) over the
/// profiled combinations including `app` that `eligible` accepts; `None` when no
/// combination qualifies. The solo runtime S is the OneCore mean.
pub(crate) fn co_runner_affinity(
    profile: &RuntimeProfile,
    app: usize,
    platform: usize,
    metric: CoRunnerAffinity,
    mut eligible: impl FnMut(&Combination) -> bool,
) -> Option<f64> {
    let solo = profile.one_core(app, platform);
    let mut sum = 0.0;
    let mut count = 0usize;
    for &c in profile.combinations_with(platform, app) {
        let combo = &profile.combinations(platform)[c];
        if !eligible(combo) {
            continue;
        }
        if let Some(with) = combo.runtime_of(app) {
            sum += metric.difference(with, solo);
            count += 1;
        }
    }
    (count > 0).then(|| sum / count as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_leave_the_metrics_of_full_rows_unchanged_and_score_zero() {
        let p = profile();
        let apps: Vec<usize> = (0..p.applications().len()).collect();
        let platforms: Vec<usize> = (0..p.platforms().len()).collect();
        let full: Vec<Vec<Option<f64>>> = apps
            .iter()
            .map(|&a| platforms.iter().map(|&q| Some(p.one_core(a, q))).collect())
            .collect();
        for &metric in PlatformAffinity::ALL {
            assert_eq!(
                affinities_with_gaps(&full, metric),
                platform_affinities(&p, &apps, &platforms, metric),
                "{metric}"
            );
        }
        // Application 1 cannot run on column 0: its EPA is over column 1 alone.
        let gapped = vec![vec![Some(100.0), Some(200.0)], vec![None, Some(50.0)]];
        let epa = affinities_with_gaps(&gapped, PlatformAffinity::Egocentric);
        assert_eq!(epa[1], vec![0.0, 1.0]);
        assert_eq!(epa[0], vec![2.0, 0.5]);
        let rpa = affinities_with_gaps(&gapped, PlatformAffinity::Reciprocal);
        assert_eq!(rpa[1][0], 0.0);
    }
    use crate::sched::profile::{
        ApplicationProfile, CombinationSpec, ProfiledPlatform, RuntimeDistribution,
    };

    fn profile() -> RuntimeProfile {
        // The AutoDock runtimes quoted in Section 4.1, and a second application.
        let apps = ["AutoDock", "Other"]
            .map(|n| ApplicationProfile {
                name: n.into(),
                distribution: RuntimeDistribution::Constant,
            })
            .to_vec();
        let platforms = ["gene", "cheetah", "darth", "lcloud"]
            .map(|n| ProfiledPlatform {
                name: n.into(),
                cores_per_node: 2,
                max_nodes: None,
            })
            .to_vec();
        let one_core = vec![
            vec![480.42, 244.05, 347.11, 294.16],
            vec![100.0, 100.0, 100.0, 100.0],
        ];
        let combos = vec![
            CombinationSpec {
                platform: 0,
                runtimes: vec![(0, 500.0), (1, 150.0)],
            },
            CombinationSpec {
                platform: 0,
                runtimes: vec![(0, 490.0)],
            },
        ];
        RuntimeProfile::new("<memory>", apps, platforms, one_core, combos).unwrap()
    }

    #[test]
    fn egocentric_matches_the_papers_worked_example() {
        let p = profile();
        let epa = platform_affinities(&p, &[0, 1], &[0, 1, 2, 3], PlatformAffinity::Egocentric);
        assert!((epa[0][1] - 1.532).abs() < 5e-4, "{}", epa[0][1]);
        assert!((epa[1][0] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn single_platform_affinity_is_neutral() {
        let p = profile();
        for &m in PlatformAffinity::ALL {
            let pa = platform_affinities(&p, &[0, 1], &[2], m);
            assert!(pa
                .iter()
                .all(|r| r.len() == 1 && r[0].is_finite() && r[0] > 0.0));
        }
    }

    #[test]
    fn co_runner_affinity_averages_over_eligible_combinations() {
        let p = profile();
        let norm =
            co_runner_affinity(&p, 0, 0, CoRunnerAffinity::NormalizedDifference, |_| true).unwrap();
        let expect = ((500.0 - 480.42) / 480.42 + (490.0 - 480.42) / 480.42) / 2.0 * 100.0;
        assert!((norm - expect).abs() < 1e-9);
        let only_pairs = co_runner_affinity(&p, 0, 0, CoRunnerAffinity::RawDifference, |c| {
            c.members.len() > 1
        })
        .unwrap();
        assert!((only_pairs - (500.0 - 480.42)).abs() < 1e-9);
        assert_eq!(
            co_runner_affinity(&p, 0, 1, CoRunnerAffinity::RawDifference, |_| true),
            None
        );
    }

    #[test]
    fn metric_names_round_trip() {
        for &m in PlatformAffinity::ALL {
            assert_eq!(m.as_str().parse::<PlatformAffinity>().unwrap(), m);
        }
        for &m in CoRunnerAffinity::ALL {
            assert_eq!(m.as_str().parse::<CoRunnerAffinity>().unwrap(), m);
        }
        assert!("nope".parse::<PlatformAffinity>().is_err());
    }
}
