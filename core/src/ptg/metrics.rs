//! The quality of a schedule of several PTGs (§3.2, §5.2.6).

use serde::{Deserialize, Serialize};

use super::schedule::Schedule;

/// The paper's three metrics and the cluster's utilization for one schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// `Σ_i C_max_i / Σ_i C*_max_i` (§3.2): not the mean of the stretches, which the paper
    /// shows to be unstable.
    pub average_stretch: f64,
    /// `max_i C_max_i` (§3.2), seconds.
    pub makespan: f64,
    /// `max_i C_max_i / C*_max_i`, the unfairness (§3.2; the RR prints the ratio inverted,
    /// the text means this one).
    pub maximum_stretch: f64,
    /// `min_i C_max_i / C*_max_i`: below 1 when a PTG ends sooner than alone (§5.2.1 notes
    /// this for 6% of the CRA scenarios).
    pub minimum_stretch: f64,
    /// Busy processor-seconds over `P × makespan` (§5.2.6, Table 2).
    pub utilization: f64,
}

impl Metrics {
    /// The metrics of `schedule` on `processors` processors, where PTG `i` alone on the
    /// cluster completes at `dedicated[i]` (`C*_max_i`). `C_max_i` is counted from time 0,
    /// when every PTG is submitted.
    pub fn of(schedule: &Schedule, dedicated: &[f64], processors: u32) -> Metrics {
        let completions: Vec<f64> = (0..dedicated.len())
            .map(|i| schedule.completion(i))
            .collect();
        let total: f64 = completions.iter().sum();
        let total_dedicated: f64 = dedicated.iter().sum();
        let stretches: Vec<f64> = completions
            .iter()
            .zip(dedicated)
            .map(|(c, d)| if *d > 0.0 { c / d } else { 1.0 })
            .collect();
        let maximum_stretch = stretches.iter().copied().fold(0.0, f64::max);
        let minimum_stretch = stretches.iter().copied().fold(f64::INFINITY, f64::min);
        let makespan = schedule.makespan();
        Metrics {
            average_stretch: if total_dedicated > 0.0 {
                total / total_dedicated
            } else {
                1.0
            },
            makespan,
            maximum_stretch,
            minimum_stretch,
            utilization: if makespan > 0.0 {
                schedule.busy_area() / (processors as f64 * makespan)
            } else {
                1.0
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptg::schedule::Placement;

    #[test]
    fn the_papers_example_of_average_stretch() {
        // §3.2: 100 processors, 100 jobs of 1 and one of ε. Schedule B (ε after a 1) gives
        // (101 + ε)/(100 + ε), schedule A (ε first) gives (100 + 2ε)/(100 + ε).
        let eps = 0.01;
        let one = |start: f64, d: f64| {
            vec![Placement {
                start,
                finish: start + d,
                processors: 1,
            }]
        };
        let mut a = Schedule::empty(&[]);
        let mut b = Schedule::empty(&[]);
        for _ in 0..99 {
            a.placements.push(one(0.0, 1.0));
            b.placements.push(one(0.0, 1.0));
        }
        a.placements.push(one(eps, 1.0)); // the last unit job waits for ε
        a.placements.push(one(0.0, eps));
        b.placements.push(one(0.0, 1.0));
        b.placements.push(one(1.0, eps));
        let mut dedicated = vec![1.0; 100];
        dedicated.push(eps);
        let ma = Metrics::of(&a, &dedicated, 100);
        let mb = Metrics::of(&b, &dedicated, 100);
        assert!((ma.average_stretch - (100.0 + 2.0 * eps) / (100.0 + eps)).abs() < 1e-12);
        assert!((mb.average_stretch - (101.0 + eps) / (100.0 + eps)).abs() < 1e-12);
        assert!((mb.maximum_stretch - (1.0 + eps) / eps).abs() < 1e-9);
        assert!((ma.maximum_stretch - (1.0 + eps)).abs() < 1e-12);
        assert_eq!(ma.minimum_stretch, 1.0);
        assert_eq!(mb.makespan, 1.0 + eps);
        // B: 100 + ε busy processor-seconds over 100 × (1 + ε).
        assert!((mb.utilization - (100.0 + eps) / (100.0 * (1.0 + eps))).abs() < 1e-12);
    }
}
