//! Confidence intervals for the reproductions' headline differences: the mean of paired
//! per-seed differences with a two-sided 95 % Student-t interval, and a verdict helper
//! that compares an interval with a claim's stated threshold.

/// A sample mean with its 95 % confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Sample mean.
    pub mean: f64,
    /// Lower end of the 95 % interval (the mean when n < 2).
    pub low: f64,
    /// Upper end of the 95 % interval (the mean when n < 2).
    pub high: f64,
    /// Sample size.
    pub n: usize,
}

impl Interval {
    /// The mean and 95 % t-interval of `values` (NaN mean for an empty sample).
    pub fn of(values: &[f64]) -> Interval {
        let n = values.len();
        if n == 0 {
            return Interval {
                mean: f64::NAN,
                low: f64::NAN,
                high: f64::NAN,
                n,
            };
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Interval {
                mean,
                low: mean,
                high: mean,
                n,
            };
        }
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half = t_975(n - 1) * (var / n as f64).sqrt();
        Interval {
            mean,
            low: mean - half,
            high: mean + half,
            n,
        }
    }

    /// `+12.3 % [+10.1, +14.5]` for fractions (0.123 → +12.3 %).
    pub fn percent(&self) -> String {
        if self.n < 2 {
            return format!("{:+.1} % (n = {})", self.mean * 100.0, self.n);
        }
        format!(
            "{:+.1} % [{:+.1}, {:+.1}]",
            self.mean * 100.0,
            self.low * 100.0,
            self.high * 100.0
        )
    }
}

/// The 97.5 % quantile of Student's t with `dof` degrees of freedom (table to 30, then
/// the normal approximation with the first correction term).
pub fn t_975(dof: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match dof {
        0 => f64::INFINITY,
        d if d <= 30 => TABLE[d - 1],
        d => 1.959_964 + 2.37 / d as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_by_hand() {
        // mean 2, sd 1, n 3: half-width 4.303 / sqrt(3).
        let i = Interval::of(&[1.0, 2.0, 3.0]);
        assert!((i.mean - 2.0).abs() < 1e-12);
        assert!((i.high - 2.0 - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(i.percent(), "+200.0 % [-48.4, +448.4]");
        assert_eq!(Interval::of(&[0.5]).low, 0.5);
        assert!(Interval::of(&[]).mean.is_nan());
        assert!((t_975(99) - 1.984).abs() < 0.002);
    }
}
