//! Fairness and efficiency (Section 3 and 6.1): throughput normalized to Fastest-OneCore,
//! fairness = 1 − σ/μ of the normalized throughputs, efficiency = makespan over the
//! makespan of Fairness + AllCore.

use super::profile::RuntimeProfile;

/// Fastest-OneCore throughput (tasks/hour) of profile application `app`: a fair share of
/// `fair_share_cores` single-task nodes on its fastest platform among `platforms`.
pub fn fastest_one_core_throughput(
    profile: &RuntimeProfile,
    app: usize,
    platforms: &[usize],
    fair_share_cores: f64,
) -> f64 {
    let fastest = platforms
        .iter()
        .map(|&p| profile.one_core(app, p))
        .fold(f64::INFINITY, f64::min);
    if fastest.is_finite() {
        fair_share_cores * 3600.0 / fastest
    } else {
        0.0
    }
}

/// `1 − σ/μ` (population σ) of `values`; 1 for zero or one value, 0 if the mean is 0.
pub fn fairness_index(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 1.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return 0.0;
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    1.0 - var.sqrt() / mean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_are_perfectly_fair() {
        assert_eq!(fairness_index(&[0.5, 0.5, 0.5]), 1.0);
        assert_eq!(fairness_index(&[]), 1.0);
        assert_eq!(fairness_index(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn spread_lowers_fairness() {
        // mean 2, σ 1 → 0.5
        let f = fairness_index(&[1.0, 3.0]);
        assert!((f - 0.5).abs() < 1e-12);
    }
}
