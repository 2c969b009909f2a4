//! An alternative fairness for dynamic submission (does PAF stay fair when applications arrive over time?): the
//! paper normalizes each application's throughput to Fastest-OneCore with a fair share of
//! total cores / all applications. Under Poisson arrivals an application that runs while
//! few others are present can use more than that share, and one that arrives into a full
//! system less. Here the fair share is total cores / the time-averaged number of
//! applications present during the application's own lifetime (itself included), i.e. the
//! normalized throughput is scaled by that average / all applications.

use super::outcome::AppOutcome;
use hetpilot_core::sched::fairness_index;

/// 1 − σ/μ of the present-share normalized throughputs of the applications that ran.
pub(crate) fn present_share_fairness(apps: &[AppOutcome]) -> f64 {
    let n = apps.len() as f64;
    let lifetimes: Vec<Option<(f64, f64)>> = apps
        .iter()
        .map(|a| a.finish.map(|f| (a.arrival, f)))
        .collect();
    let normalized: Vec<f64> = apps
        .iter()
        .zip(&lifetimes)
        .filter_map(|(a, life)| {
            let (start, end) = (*life)?;
            let norm = a.normalized_throughput?;
            let elapsed = end - start;
            if elapsed <= 0.0 {
                return None;
            }
            let overlap: f64 = lifetimes
                .iter()
                .flatten()
                .map(|&(s, e)| (end.min(e) - start.max(s)).max(0.0))
                .sum();
            Some(norm * (overlap / elapsed) / n)
        })
        .collect();
    fairness_index(&normalized)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(arrival: f64, finish: f64, normalized: f64) -> AppOutcome {
        AppOutcome {
            arrival,
            finish: Some(finish),
            tasks: 1,
            throughput_per_hour: Some(1.0),
            normalized_throughput: Some(normalized),
        }
    }

    #[test]
    fn an_application_alone_is_held_to_the_whole_machine() {
        // Two applications that never overlap: each ran alone (average presence 1 of 2),
        // so normalized 2.0 and 1.0 become 1.0 and 0.5.
        let apart = [app(0.0, 10.0, 2.0), app(10.0, 20.0, 1.0)];
        let expected = fairness_index(&[1.0, 0.5]);
        assert!((present_share_fairness(&apart) - expected).abs() < 1e-12);
        // Fully overlapping: presence 2 of 2, the paper's normalization unchanged.
        let together = [app(0.0, 10.0, 2.0), app(0.0, 10.0, 1.0)];
        let same = fairness_index(&[2.0, 1.0]);
        assert!((present_share_fairness(&together) - same).abs() < 1e-12);
    }
}
