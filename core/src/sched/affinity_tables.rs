//! The affinity tables of a whole profile, as the paper prints them: Table 3 (throughput,
//! EPA, RPA per application and platform) and Table 4 (raw and normalized co-runner
//! difference over all profiled combinations).

use serde::Serialize;

use super::affinity::{
    co_runner_affinity, platform_affinities, CoRunnerAffinity, PlatformAffinity,
};
use super::profile::RuntimeProfile;

/// Tables 3 and 4 for every application × platform of a profile.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AffinityTables {
    /// Application names, in profile order (the rows).
    pub applications: Vec<String>,
    /// Platform names, in profile order (the columns).
    pub platforms: Vec<String>,
    /// Tasks per hour, `[app][platform]`.
    pub throughput: Vec<Vec<f64>>,
    /// Egocentric platform affinity (EPA, Section 4.1), `[app][platform]`; unitless ratio.
    pub egocentric: Vec<Vec<f64>>,
    /// Reciprocal platform affinity (RPA, Section 4.1), `[app][platform]`; unitless ratio.
    pub reciprocal: Vec<Vec<f64>>,
    /// Seconds; `None` where the profile has no combination for the pair.
    pub raw_difference: Vec<Vec<Option<f64>>>,
    /// Percent.
    pub normalized_difference: Vec<Vec<Option<f64>>>,
}

impl AffinityTables {
    /// Computes both tables over every application and platform of `profile`.
    pub fn of(profile: &RuntimeProfile) -> Self {
        let apps: Vec<usize> = (0..profile.applications().len()).collect();
        let platforms: Vec<usize> = (0..profile.platforms().len()).collect();
        let pa = |m| platform_affinities(profile, &apps, &platforms, m);
        let ca = |m| {
            apps.iter()
                .map(|&a| {
                    platforms
                        .iter()
                        .map(|&p| co_runner_affinity(profile, a, p, m, |_| true))
                        .collect()
                })
                .collect()
        };
        Self {
            applications: profile
                .applications()
                .iter()
                .map(|a| a.name.clone())
                .collect(),
            platforms: profile.platforms().iter().map(|p| p.name.clone()).collect(),
            throughput: pa(PlatformAffinity::Throughput),
            egocentric: pa(PlatformAffinity::Egocentric),
            reciprocal: pa(PlatformAffinity::Reciprocal),
            raw_difference: ca(CoRunnerAffinity::RawDifference),
            normalized_difference: ca(CoRunnerAffinity::NormalizedDifference),
        }
    }
}
