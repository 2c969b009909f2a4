//! The variant scenario's comparison: first-fit variants against the variant first
//! level's affinity placements, on makespan, fairness and who held the GPUs, as Markdown.

use std::fmt::Write;

use super::stats::Interval;
use crate::sim::variants::{simulate, Placement, VariantRun, VariantScenario};
use hetpilot_core::sched::variants::VariantScheduler;
use hetpilot_core::sched::SchedError;
use hetpilot_core::sched::SchedulerSettings;

/// One placement's runs.
#[derive(Debug, Clone)]
pub struct PlacementRuns {
    /// `first-fit` or the first-level policy's name.
    pub label: String,
    /// One per seed, in seed order.
    pub runs: Vec<VariantRun>,
}

/// Runs first-fit and every policy the scenario names, `scenario.runs` seeds each (run r
/// uses seed `scenario.seed + r` under every placement).
pub fn run_variant_scenario(scenario: &VariantScenario) -> Result<Vec<PlacementRuns>, SchedError> {
    let seeds: Vec<u64> = (0..u64::from(scenario.runs))
        .map(|r| scenario.seed.wrapping_add(r))
        .collect();
    let mut out = vec![PlacementRuns {
        label: "first-fit".into(),
        runs: seeds
            .iter()
            .map(|&s| simulate(scenario, &Placement::FirstFit, s))
            .collect::<Result<_, _>>()?,
    }];
    for policy in &scenario.policies {
        let scheduler = VariantScheduler::new(SchedulerSettings {
            first_level: policy.parse()?,
            platform_affinity: scenario.platform_affinity.parse()?,
            ..Default::default()
        })?;
        out.push(PlacementRuns {
            label: policy.clone(),
            runs: seeds
                .iter()
                .map(|&s| simulate(scenario, &Placement::Affinity(&scheduler), s))
                .collect::<Result<_, _>>()?,
        });
    }
    Ok(out)
}

/// The Markdown table: per placement the mean makespan and fairness with their 95 %
/// intervals, the fraction of each application's tasks that ran on a GPU and its normalized throughput.
pub fn variant_table(scenario: &VariantScenario, results: &[PlacementRuns]) -> String {
    let names: Vec<String> = scenario
        .applications(&[])
        .into_iter()
        .map(|a| a.name)
        .collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| placement | makespan (s) [95 %] | fairness [95 %] | tasks run on a GPU ({}) | normalized throughput ({}) |",
        names.join(" / "),
        names.join(" / ")
    );
    s.push_str("|---|---|---|---|---|\n");
    for r in results {
        let makespan = Interval::of(&r.runs.iter().map(|x| x.makespan_s).collect::<Vec<_>>());
        let fairness = Interval::of(&r.runs.iter().map(|x| x.fairness).collect::<Vec<_>>());
        let share: Vec<String> = (0..names.len())
            .map(|a| {
                let v: Vec<f64> = r.runs.iter().map(|x| x.gpu_task_fraction[a]).collect();
                format!("{:.0} %", 100.0 * Interval::of(&v).mean)
            })
            .collect();
        let normalized: Vec<String> = (0..names.len())
            .map(|a| {
                let v: Vec<f64> = r.runs.iter().map(|x| x.normalized_throughput[a]).collect();
                format!("{:.2}", Interval::of(&v).mean)
            })
            .collect();
        let _ = writeln!(
            s,
            "| {} | {:.0} [{:.0}, {:.0}] | {:.3} [{:.3}, {:.3}] | {} | {} |",
            r.label,
            makespan.mean,
            makespan.low,
            makespan.high,
            fairness.mean,
            fairness.low,
            fairness.high,
            share.join(" / "),
            normalized.join(" / ")
        );
    }
    s
}
