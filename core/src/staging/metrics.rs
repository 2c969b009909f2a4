//! Partition quality with the definitions of KaHyPar / Mt-KaHyPar, so results compare
//! directly: km1 = Σ_e w(e)·(λ(e) − 1) (connectivity − 1), cut = Σ_{λ(e)>1} w(e), and
//! imbalance = max_b c(V_b) / ⌈c(V)/k⌉ − 1 with the balance bound
//! c(V_b) ≤ ⌊(1 + ε)·⌈c(V)/k⌉⌋.

use crate::staging::hypergraph::{Hypergraph, NetId};

/// λ(e) for every net, given block ids `parts`.
fn connectivity(hg: &Hypergraph, parts: &[u32], e: NetId, seen: &mut Vec<u32>) -> i64 {
    seen.clear();
    for &p in hg.pins(e) {
        let b = parts[p as usize];
        if !seen.contains(&b) {
            seen.push(b);
        }
    }
    seen.len() as i64
}

/// Connectivity − 1 objective.
pub(crate) fn km1(hg: &Hypergraph, parts: &[u32]) -> i64 {
    let mut seen = Vec::new();
    (0..hg.num_nets() as NetId)
        .map(|e| hg.net_weight(e) * (connectivity(hg, parts, e, &mut seen) - 1))
        .sum()
}

/// Cut-net objective.
pub fn cut(hg: &Hypergraph, parts: &[u32]) -> i64 {
    let mut seen = Vec::new();
    (0..hg.num_nets() as NetId)
        .filter(|&e| connectivity(hg, parts, e, &mut seen) > 1)
        .map(|e| hg.net_weight(e))
        .sum()
}

/// c(V_b) for b in 0..k.
pub(crate) fn part_weights(hg: &Hypergraph, parts: &[u32], k: usize) -> Vec<i64> {
    let mut w = vec![0; k];
    for (v, &b) in parts.iter().enumerate() {
        w[b as usize] += hg.vertex_weight(v as u32);
    }
    w
}

/// ⌈c(V)/k⌉: the weight of a block in a perfectly balanced partition.
pub(crate) fn perfect_part_weight(total: i64, k: usize) -> i64 {
    (total + k as i64 - 1) / k as i64
}

/// ⌊(1 + ε)·⌈c(V)/k⌉⌋, Mt-KaHyPar's maximum block weight.
#[cfg(test)]
pub(crate) fn max_part_weight(total: i64, k: usize, epsilon: f64) -> i64 {
    ((1.0 + epsilon) * perfect_part_weight(total, k) as f64).floor() as i64
}

/// max_b c(V_b) / ⌈c(V)/k⌉ − 1.
pub(crate) fn imbalance(hg: &Hypergraph, parts: &[u32], k: usize) -> f64 {
    let perfect = perfect_part_weight(hg.total_weight(), k) as f64;
    let heaviest = part_weights(hg, parts, k).into_iter().max().unwrap_or(0) as f64;
    heaviest / perfect - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn km1_cut_and_imbalance_follow_the_definitions() {
        let hg = Hypergraph::new(
            vec![1, 1, 1, 1],
            vec![3, 2, 5],
            vec![vec![0, 1, 2], vec![2, 3], vec![0, 1, 2, 3]],
        )
        .unwrap();
        let parts = [0, 1, 2, 2];
        // net0 λ=3 → 2·3, net1 λ=1 → 0, net2 λ=3 → 2·5
        assert_eq!(km1(&hg, &parts), 16);
        assert_eq!(cut(&hg, &parts), 8);
        // perfect = ⌈4/3⌉ = 2, heaviest = 2
        assert!((imbalance(&hg, &parts, 3) - 0.0).abs() < 1e-12);
        assert_eq!(max_part_weight(100, 4, 0.03), 25);
        assert_eq!(max_part_weight(1000, 4, 0.03), 257);
    }
}
