//! Section 6.2's co-runner-metric analysis of the two-level paper: "in each platform, we
//! analyze all possible resource allocations for the five applications (in which 2, 3,
//! 4, or 5 of them are assigned to the platform), and estimate the throughput of the
//! platform" with MAF under the raw and under the normalized difference; the paper finds
//! the normalized one up to 8 % higher. Our reading of "all possible allocations": every
//! subset of 2..=all applications, the platform's cores split evenly among its members
//! (the remainder to the first ones); the throughput is the profile's mean tasks per second
//! of the nodes MAF builds (its leftovers packed with a fixed seed, the same for both).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::affinity::CoRunnerAffinity;
use super::profile::RuntimeProfile;
use super::second_level::{self, map_platform, PlatformMapping, SecondLevel};
use super::settings::SchedulerSettings;

/// One platform's result over every subset of applications.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricStudyRow {
    /// Platform name.
    pub platform: String,
    /// Nodes assumed.
    pub nodes: u32,
    /// Subsets of applications analysed.
    pub subsets: usize,
    /// Subsets where the two metrics give different throughputs.
    pub differ: usize,
    /// Largest relative gain of the normalized difference over the raw one.
    pub max_gain: f64,
    /// Largest relative loss (the most negative gain, 0 if none).
    pub max_loss: f64,
    /// Mean gain over the subsets.
    pub mean_gain: f64,
}

/// The study on every platform of `profile`, with `nodes[p]` nodes on platform p.
pub fn co_runner_metric_study(profile: &RuntimeProfile, nodes: &[u32]) -> Vec<MetricStudyRow> {
    let apps = profile.applications().len();
    let policy = |metric| {
        SecondLevel::Maf.build(&SchedulerSettings {
            co_runner_affinity: metric,
            ..SchedulerSettings::default()
        })
    };
    let (raw, normalized) = (
        policy(CoRunnerAffinity::RawDifference),
        policy(CoRunnerAffinity::NormalizedDifference),
    );
    profile
        .platforms()
        .iter()
        .enumerate()
        .map(|(p, platform)| {
            let n = nodes.get(p).copied().unwrap_or(1).max(1);
            let cores = n * platform.cores_per_node;
            let mut gains = Vec::new();
            for mask in 1u32..(1 << apps) {
                let members: Vec<usize> = (0..apps).filter(|a| mask & (1 << a) != 0).collect();
                if members.len() < 2 {
                    continue;
                }
                let k = members.len() as u32;
                let shares = (0..k)
                    .map(|i| cores / k + u32::from(i < cores % k))
                    .collect();
                let mapping = PlatformMapping {
                    profile,
                    platform: p,
                    nodes: n,
                    cores_per_node: platform.cores_per_node,
                    apps: members,
                    shares,
                };
                let tr = throughput(&mapping, raw.as_ref());
                let tn = throughput(&mapping, normalized.as_ref());
                gains.push(if tr > 0.0 { tn / tr - 1.0 } else { 0.0 });
            }
            MetricStudyRow {
                platform: platform.name.clone(),
                nodes: n,
                subsets: gains.len(),
                differ: gains.iter().filter(|g| g.abs() > 1e-12).count(),
                max_gain: gains.iter().copied().fold(0.0, f64::max),
                max_loss: gains.iter().copied().fold(0.0, f64::min),
                mean_gain: gains.iter().sum::<f64>() / gains.len().max(1) as f64,
            }
        })
        .collect()
}

/// Tasks per second of the nodes `policy` maps (profile means per combination).
fn throughput(mapping: &PlatformMapping, policy: &dyn second_level::SecondLevelPolicy) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let groups = map_platform(policy, mapping, false, &mut rng);
    let mut total = 0.0;
    for g in &groups {
        let mut members: Vec<usize> = g.slots.iter().map(|&(i, _)| mapping.apps[i]).collect();
        members.sort_unstable();
        for &(i, cores) in &g.slots {
            let solo = g.slots.len() == 1 && cores == 1;
            let runtime =
                mapping
                    .profile
                    .runtime_in(mapping.apps[i], mapping.platform, &members, solo);
            total += g.nodes as f64 * cores as f64 / runtime;
        }
    }
    total
}

/// The rows as a Markdown table.
pub fn metric_study_markdown(rows: &[MetricStudyRow]) -> String {
    let mut md = String::from(
        "| platform | nodes | application subsets | subsets where the metrics differ | normalized vs raw: max gain | mean | max loss |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:+.2} % | {:+.2} % | {:+.2} % |\n",
            r.platform,
            r.nodes,
            r.subsets,
            r.differ,
            r.max_gain * 100.0,
            r.mean_gain * 100.0,
            r.max_loss * 100.0
        ));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subset_of_two_or_more_is_analysed_on_every_platform() {
        let profile = crate::sched::second_level::tests::profile();
        let nodes = vec![4; profile.platforms().len()];
        let rows = co_runner_metric_study(&profile, &nodes);
        assert_eq!(rows.len(), profile.platforms().len());
        let apps = profile.applications().len();
        let subsets = (1usize << apps) - 1 - apps;
        for r in &rows {
            assert_eq!(r.subsets, subsets, "{r:?}");
            assert!(r.max_loss <= 0.0 && r.max_gain >= 0.0);
            assert!(r.mean_gain >= r.max_loss && r.mean_gain <= r.max_gain);
        }
        assert!(metric_study_markdown(&rows).contains("| platform |"));
    }
}
