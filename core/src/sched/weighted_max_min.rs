//! Weighted max-min fair division of an integer number of cores among claimants with
//! capped demands ("water-filling"): the fair share of Algorithm 2 line 7 and of the
//! Fairness policy, where cores a claimant does not need go to the others.

/// Split `capacity` cores among claimants with the given `demands` (upper bounds) and
/// positive `weights`: nobody gets more than its demand, and the rest are shared in
/// proportion to weight. Integer remainders go to the claimants with the largest
/// fractional part (ties to the lower index), so the result is deterministic and sums to
/// `min(capacity, Σ demands)`.
pub(crate) fn weighted_fair_share(capacity: u64, demands: &[u64], weights: &[f64]) -> Vec<u64> {
    let n = demands.len();
    let mut share = vec![0u64; n];
    let mut open: Vec<usize> = (0..n).filter(|&i| demands[i] > 0).collect();
    // Claimants whose demand per weight is lowest are saturated first.
    open.sort_by(|&a, &b| {
        (demands[a] as f64 / weights[a]).total_cmp(&(demands[b] as f64 / weights[b]))
    });
    let mut left = capacity;
    let mut weight_left: f64 = open.iter().map(|&i| weights[i]).sum();
    let mut first = 0;
    while first < open.len() {
        let i = open[first];
        let level = left as f64 / weight_left;
        if (demands[i] as f64) <= level * weights[i] {
            share[i] = demands[i];
            left -= demands[i];
            weight_left -= weights[i];
            first += 1;
        } else {
            break;
        }
    }
    let rest = &open[first..];
    if rest.is_empty() {
        return share;
    }
    // Nobody left is saturated: proportional split, floors first.
    let mut fractions = Vec::with_capacity(rest.len());
    let mut given = 0u64;
    for &i in rest {
        let exact = left as f64 * weights[i] / weight_left;
        let floor = (exact.floor() as u64).min(demands[i]);
        share[i] = floor;
        given += floor;
        fractions.push((exact - floor as f64, i));
    }
    let mut remainder = left.saturating_sub(given);
    fractions.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    while remainder > 0 {
        let mut progressed = false;
        for &(_, i) in &fractions {
            if remainder == 0 {
                break;
            }
            if share[i] < demands[i] {
                share[i] += 1;
                remainder -= 1;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    share
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn unneeded_cores_go_to_the_others() {
        // 2,400 cores, five users, one needs only 100.
        let s = weighted_fair_share(2400, &[100, 10_000, 10_000, 10_000, 10_000], &[1.0; 5]);
        assert_eq!(s, vec![100, 575, 575, 575, 575]);
    }

    #[test]
    fn weights_scale_the_split() {
        let s = weighted_fair_share(300, &[1000, 1000], &[2.0, 1.0]);
        assert_eq!(s, vec![200, 100]);
    }

    proptest! {
        #[test]
        fn shares_are_capped_complete_and_max_min_fair(
            capacity in 0u64..5000,
            demands in proptest::collection::vec(0u64..3000, 0..12),
        ) {
            let weights = vec![1.0; demands.len()];
            let s = weighted_fair_share(capacity, &demands, &weights);
            let total: u64 = s.iter().sum();
            let need: u64 = demands.iter().sum();
            prop_assert_eq!(total, capacity.min(need));
            for (i, (&si, &di)) in s.iter().zip(&demands).enumerate() {
                prop_assert!(si <= di);
                // Anyone below its demand is within one core of everyone else's share.
                if si < di {
                    for (k, &sk) in s.iter().enumerate() {
                        prop_assert!(sk <= si + 1, "claimant {} has {} while {} unsatisfied has {}", k, sk, i, si);
                    }
                }
            }
        }
    }
}
