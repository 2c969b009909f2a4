//! Twin vertices: vertices with exactly the same incident nets (in a staging workload,
//! tasks that read exactly the same files).
//!
//! Putting a vertex in its twin's block never adds a block to any net, so merging twins
//! cannot make any partition's km1 worse; it only coarsens the balance granularity, which
//! the maximum cluster weight bounds. A bisection's coarsening merges the twins whose nets
//! are all too large to rate before it rates anything ([`super::coarsen`]); otherwise
//! they join nobody.

use rayon::prelude::*;

use super::coarsen::fingerprint;
use crate::staging::hypergraph::{Hypergraph, VertexId};

/// The groups of at least two twins among the vertices that are in some net and whose
/// nets all have more than `nets_above` pins, each group in ascending vertex order; the
/// groups come in a fixed order (by fingerprint of their net list, then by first vertex).
pub(super) fn twin_groups(hg: &Hypergraph, nets_above: usize) -> Vec<Vec<VertexId>> {
    let mut keyed: Vec<(u64, VertexId)> = (0..hg.num_vertices() as VertexId)
        .into_par_iter()
        .with_min_len(4096)
        .filter(|&v| {
            let nets = hg.incident_nets(v);
            !nets.is_empty() && nets.iter().all(|&e| hg.net_size(e) > nets_above)
        })
        .map(|v| (fingerprint(hg.incident_nets(v)), v))
        .collect();
    keyed.par_sort_unstable();
    let mut groups = Vec::new();
    for run in keyed.chunk_by(|a, b| a.0 == b.0) {
        if run.len() < 2 {
            continue;
        }
        // Equal fingerprints almost always mean equal net lists; split the rare collisions.
        let mut rest: Vec<VertexId> = run.iter().map(|&(_, v)| v).collect();
        while let Some(&first) = rest.first() {
            let nets = hg.incident_nets(first);
            let (same, other): (Vec<VertexId>, Vec<VertexId>) =
                rest.iter().partition(|&&v| hg.incident_nets(v) == nets);
            if same.len() >= 2 {
                groups.push(same);
            }
            rest = other;
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_exactly_the_vertices_with_equal_net_lists() {
        // Vertices 0, 2 and 5 read nets {0, 1}; 1 and 4 read {1}; 3 reads {0, 1, 2}; 6
        // reads {2}; 7 is in no net.
        let hg = Hypergraph::new(
            vec![1; 8],
            vec![1, 1, 1],
            vec![vec![0, 2, 3, 5], vec![0, 1, 2, 3, 4, 5], vec![3, 6]],
        )
        .unwrap();
        let sorted = |mut groups: Vec<Vec<VertexId>>| {
            groups.sort();
            groups
        };
        assert_eq!(sorted(twin_groups(&hg, 0)), vec![vec![0, 2, 5], vec![1, 4]]);
        // Net 0 has 4 pins, net 1 has 6: above 4 pins only {1, 4} are left.
        assert_eq!(sorted(twin_groups(&hg, 4)), vec![vec![1, 4]]);
    }
}
