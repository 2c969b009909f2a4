//! Walltime normalization on a platform whose speeds differ (Section 3.2, eq. 6/9 of the
//! multi-resource fairshare paper): "if a job ends up on a slow machine, its walltime will
//! be higher, thus the fairshare usage of its owner will increase", so without
//! normalization a user's usage depends on where the scheduler put the jobs. The study
//! replays the same trace twice, first-fit on the fastest machines first and on the slowest
//! first, with runtimes inversely proportional to speed and no decay, and compares each
//! user's usage between the two placements, with normalization off and on. With it on, the
//! charge walltime × SPEC × P(j) no longer depends on the placement.

use super::fairshare::FairshareJob;
use super::fairshare_queue::{replay_fairshare_queue, Placement, QueueReplay, ReplayError};
use hetpilot_core::fairshare::{MachinePool, PenaltyFunction, Shares};

/// One normalization setting: each user's usage under both placements.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacementSensitivity {
    /// Walltime normalization (eq. 9) on.
    pub normalize_walltime: bool,
    /// (user, usage with fastest-first placement, with slowest-first), PE-seconds, users
    /// sorted by name.
    pub usage: Vec<(String, f64, f64)>,
    /// Mean wait (s) under fastest-first and slowest-first placement.
    pub mean_wait: (f64, f64),
}

impl PlacementSensitivity {
    /// Per user: usage with slowest-first over usage with fastest-first placement (users
    /// with no usage left out), sorted.
    pub fn ratios(&self) -> Vec<f64> {
        let mut r: Vec<f64> = self
            .usage
            .iter()
            .filter(|(_, fast, _)| *fast > 0.0)
            .map(|(_, fast, slow)| slow / fast)
            .collect();
        r.sort_by(f64::total_cmp);
        r
    }
}

/// Replays `jobs` on `platform` under the four combinations (normalization off/on ×
/// fastest/slowest first), runtimes scaled by speed, no decay.
pub fn placement_sensitivity(
    platform: &MachinePool,
    penalty: &dyn PenaltyFunction,
    jobs: &[FairshareJob],
) -> Result<[PlacementSensitivity; 2], ReplayError> {
    let shares = Shares::default();
    let run = |normalize_walltime: bool| -> Result<PlacementSensitivity, ReplayError> {
        let replay = |placement| {
            let settings = QueueReplay {
                platform,
                penalty,
                half_life: None,
                shares: &shares,
                normalize_walltime,
                runtime_scales_with_speed: true,
                placement,
            };
            replay_fairshare_queue(&settings, jobs, &mut |_| {})
        };
        let fast = replay(Placement::FastestFirst)?;
        let slow = replay(Placement::SlowestFirst)?;
        let mean_wait = |r: &super::fairshare_queue::QueueReplayResult| {
            r.outcomes
                .iter()
                .zip(jobs)
                .map(|(o, j)| o.wait(j))
                .sum::<f64>()
                / jobs.len().max(1) as f64
        };
        let mut users: Vec<String> = fast.ledger.users().map(str::to_string).collect();
        users.sort();
        // No decay: the usage at any time after the last job is the sum of the charges.
        let usage = users
            .into_iter()
            .map(|u| {
                let (f, s) = (fast.ledger.usage(&u, 0.0), slow.ledger.usage(&u, 0.0));
                (u, f, s)
            })
            .collect();
        Ok(PlacementSensitivity {
            normalize_walltime,
            usage,
            mean_wait: (mean_wait(&fast), mean_wait(&slow)),
        })
    };
    Ok([run(false)?, run(true)?])
}

/// The study as a Markdown table: per setting, how far the users' usage moves between the
/// two placements.
pub fn placement_sensitivity_markdown(study: &[PlacementSensitivity]) -> String {
    let mut md = String::from(
        "| walltime normalization | users | usage slowest-first / fastest-first: min | median | max | users moved > 1 % | mean wait fastest-first / slowest-first (s) |\n|---|---|---|---|---|---|---|\n",
    );
    for s in study {
        let r = s.ratios();
        let q = |p: f64| {
            r.get(((p * (r.len().max(1) - 1) as f64).round()) as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        let moved = r.iter().filter(|v| (*v - 1.0).abs() > 0.01).count();
        md.push_str(&format!(
            "| {} | {} | {:.4} | {:.4} | {:.4} | {} | {:.0} / {:.0} |\n",
            if s.normalize_walltime { "on" } else { "off" },
            r.len(),
            q(0.0),
            q(0.5),
            q(1.0),
            moved,
            s.mean_wait.0,
            s.mean_wait.1
        ));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetpilot_core::fairshare::{JobRequest, Machine, MultiResource};

    const GB: u64 = 1 << 30;

    #[test]
    fn normalization_makes_the_usage_independent_of_the_placement() {
        let mut fast = Machine::new("fast", 1, 4, 16 * GB);
        fast.speed = 2.0;
        let slow = Machine::new("slow", 1, 4, 16 * GB);
        let platform = MachinePool::new(vec![slow, fast]).unwrap();
        let jobs: Vec<FairshareJob> = (0..4)
            .map(|i| FairshareJob {
                id: i,
                user: format!("u{}", i % 2),
                submit: i as f64,
                runtime: 100.0,
                walltime_limit: 100.0,
                request: JobRequest::uniform(1, 4, GB, 0),
            })
            .collect();
        let [off, on] = placement_sensitivity(&platform, &MultiResource, &jobs).unwrap();
        // Off, fastest-first: job 0 (u0) runs on the fast machine (50 s), job 1 (u1) on the
        // slow one (100 s); at t = 50 u0 has the smaller usage, so job 2 takes the fast
        // machine again, and job 3 takes it at t = 100: u0 ran 100 s, u1 150 s (× P(j) = 4).
        // Slowest-first: u0 ran 200 s, u1 100 s.
        assert_eq!(off.usage.len(), 2);
        assert_eq!(off.usage[0], ("u0".to_string(), 400.0, 800.0));
        assert_eq!(off.usage[1], ("u1".to_string(), 600.0, 400.0));
        assert_eq!(off.ratios(), [400.0 / 600.0, 2.0]);
        // On: every job is charged 4 × 100 s × (1 / speed) × speed = 400 whatever it ran on.
        for (user, f, s) in &on.usage {
            assert!(
                (f - 800.0).abs() < 1e-9 && (s - 800.0).abs() < 1e-9,
                "{user} {f} {s}"
            );
        }
        assert!(on.ratios().iter().all(|r| (r - 1.0).abs() < 1e-12));
        let md = placement_sensitivity_markdown(&[off, on]);
        assert!(
            md.contains("| on | 2 | 1.0000 | 1.0000 | 1.0000 | 0 |"),
            "{md}"
        );
    }
}
