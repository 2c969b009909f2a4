//! A weighted hypergraph in compressed form, indexed both ways (net → pins and
//! vertex → incident nets), as every multilevel partitioner needs it.
//!
//! In the staging model (paper Section 5.2) a vertex is a task, a net is a file and the
//! net's pins are the tasks that read it.

use crate::staging::error::StagingError;

/// Vertex and net ids are `u32`: the largest instances we target have a few million pins.
pub(crate) type VertexId = u32;
/// Id of a net (hyperedge).
pub(crate) type NetId = u32;

/// An immutable hypergraph with positive integer vertex and net weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypergraph {
    vertex_weights: Vec<i64>,
    net_weights: Vec<i64>,
    net_offsets: Vec<usize>,
    pins: Vec<VertexId>,
    vertex_offsets: Vec<usize>,
    incident_nets: Vec<NetId>,
    total_weight: i64,
}

impl Hypergraph {
    /// Builds a hypergraph from per-net pin lists. Duplicate pins inside a net are merged;
    /// empty nets, pins out of range and non-positive weights are errors.
    pub fn new(
        vertex_weights: Vec<i64>,
        net_weights: Vec<i64>,
        nets: Vec<Vec<VertexId>>,
    ) -> Result<Self, StagingError> {
        if net_weights.len() != nets.len() {
            return Err(StagingError::LengthMismatch {
                what: "net weights",
                expected: nets.len(),
                got: net_weights.len(),
            });
        }
        if let Some((index, &weight)) = vertex_weights.iter().enumerate().find(|(_, w)| **w <= 0) {
            return Err(StagingError::NonPositiveWeight {
                what: "vertex",
                index,
                weight,
            });
        }
        if let Some((index, &weight)) = net_weights.iter().enumerate().find(|(_, w)| **w <= 0) {
            return Err(StagingError::NonPositiveWeight {
                what: "net",
                index,
                weight,
            });
        }
        let n = vertex_weights.len();
        let mut net_offsets = Vec::with_capacity(nets.len() + 1);
        let mut pins = Vec::with_capacity(nets.iter().map(Vec::len).sum());
        net_offsets.push(0);
        for (e, mut net) in nets.into_iter().enumerate() {
            if net.is_empty() {
                return Err(StagingError::EmptyNet { net: e });
            }
            if let Some(&pin) = net.iter().find(|&&p| p as usize >= n) {
                return Err(StagingError::PinOutOfRange {
                    net: e,
                    pin: pin as usize,
                    num_vertices: n,
                });
            }
            net.sort_unstable();
            net.dedup();
            pins.extend_from_slice(&net);
            net_offsets.push(pins.len());
        }
        Ok(Self::from_csr(
            vertex_weights,
            net_weights,
            net_offsets,
            pins,
        ))
    }

    /// Builds the hypergraph from already validated CSR arrays (pins sorted and unique per
    /// net, all in range). Used by contraction, which guarantees these properties.
    pub(crate) fn from_csr(
        vertex_weights: Vec<i64>,
        net_weights: Vec<i64>,
        net_offsets: Vec<usize>,
        pins: Vec<VertexId>,
    ) -> Self {
        let n = vertex_weights.len();
        let mut degree = vec![0usize; n + 1];
        for &p in &pins {
            degree[p as usize + 1] += 1;
        }
        for v in 0..n {
            degree[v + 1] += degree[v];
        }
        let vertex_offsets = degree.clone();
        let mut fill = degree;
        let mut incident_nets = vec![0 as NetId; pins.len()];
        for e in 0..net_weights.len() {
            for &p in &pins[net_offsets[e]..net_offsets[e + 1]] {
                incident_nets[fill[p as usize]] = e as NetId;
                fill[p as usize] += 1;
            }
        }
        let total_weight = vertex_weights.iter().sum();
        Self {
            vertex_weights,
            net_weights,
            net_offsets,
            pins,
            vertex_offsets,
            incident_nets,
            total_weight,
        }
    }

    /// Number of vertices (tasks, for a staging workload).
    pub fn num_vertices(&self) -> usize {
        self.vertex_weights.len()
    }

    /// Number of nets (files, for a staging workload).
    pub fn num_nets(&self) -> usize {
        self.net_weights.len()
    }

    /// Number of pins: Σ over nets of the vertices each connects.
    pub fn num_pins(&self) -> usize {
        self.pins.len()
    }

    pub(crate) fn vertex_weight(&self, v: VertexId) -> i64 {
        self.vertex_weights[v as usize]
    }

    pub(crate) fn vertex_weights(&self) -> &[i64] {
        &self.vertex_weights
    }

    pub(crate) fn net_weight(&self, e: NetId) -> i64 {
        self.net_weights[e as usize]
    }

    #[cfg(test)]
    pub(crate) fn net_weights(&self) -> &[i64] {
        &self.net_weights
    }

    /// Sum of all vertex weights, c(V).
    pub(crate) fn total_weight(&self) -> i64 {
        self.total_weight
    }

    /// The vertices of net `e`, sorted.
    pub(crate) fn pins(&self, e: NetId) -> &[VertexId] {
        &self.pins[self.net_offsets[e as usize]..self.net_offsets[e as usize + 1]]
    }

    pub(crate) fn net_size(&self, e: NetId) -> usize {
        self.net_offsets[e as usize + 1] - self.net_offsets[e as usize]
    }

    /// The nets that contain vertex `v`.
    pub(crate) fn incident_nets(&self, v: VertexId) -> &[NetId] {
        &self.incident_nets[self.vertex_offsets[v as usize]..self.vertex_offsets[v as usize + 1]]
    }

    /// Keeps only the vertices with `keep[v]`, renumbered in order; nets keep their pins
    /// among the kept vertices and their weight (cut-net splitting, which keeps km1 exact
    /// under recursive bisection); nets left with fewer than two pins are dropped.
    /// Returns the sub-hypergraph and, for each new vertex, its old id.
    pub(crate) fn induced(&self, keep: &[bool]) -> (Hypergraph, Vec<VertexId>) {
        let mut new_id = vec![u32::MAX; self.num_vertices()];
        let mut old_ids = Vec::new();
        for v in 0..self.num_vertices() {
            if keep[v] {
                new_id[v] = old_ids.len() as u32;
                old_ids.push(v as VertexId);
            }
        }
        let vertex_weights = old_ids.iter().map(|&v| self.vertex_weight(v)).collect();
        let mut net_weights = Vec::new();
        let mut net_offsets = vec![0];
        let mut pins = Vec::new();
        for e in 0..self.num_nets() as NetId {
            let start = pins.len();
            pins.extend(
                self.pins(e)
                    .iter()
                    .filter(|&&p| keep[p as usize])
                    .map(|&p| new_id[p as usize]),
            );
            if pins.len() - start >= 2 {
                net_weights.push(self.net_weight(e));
                net_offsets.push(pins.len());
            } else {
                pins.truncate(start);
            }
        }
        (
            Hypergraph::from_csr(vertex_weights, net_weights, net_offsets, pins),
            old_ids,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Hypergraph {
        Hypergraph::new(
            vec![1, 2, 3, 4],
            vec![5, 7, 1],
            vec![vec![0, 1], vec![1, 2, 3, 3], vec![3]],
        )
        .unwrap()
    }

    #[test]
    fn csr_is_consistent_both_ways() {
        let hg = sample();
        assert_eq!(hg.num_pins(), 6);
        assert_eq!(hg.pins(1), &[1, 2, 3]);
        assert_eq!(hg.incident_nets(3), &[1, 2]);
        assert_eq!(hg.incident_nets(0), &[0]);
        assert_eq!(hg.total_weight(), 10);
    }

    #[test]
    fn rejects_bad_nets() {
        assert_eq!(
            Hypergraph::new(vec![1, 1], vec![1], vec![vec![0, 2]]),
            Err(StagingError::PinOutOfRange {
                net: 0,
                pin: 2,
                num_vertices: 2
            })
        );
        assert_eq!(
            Hypergraph::new(vec![1, 1], vec![1], vec![vec![]]),
            Err(StagingError::EmptyNet { net: 0 })
        );
        assert!(Hypergraph::new(vec![0, 1], vec![1], vec![vec![0, 1]]).is_err());
    }

    #[test]
    fn induced_splits_cut_nets() {
        let hg = sample();
        let (sub, old) = hg.induced(&[false, true, true, true]);
        assert_eq!(old, vec![1, 2, 3]);
        // net 0 keeps one pin and is dropped; net 1 survives whole; net 2 has one pin.
        assert_eq!(sub.num_nets(), 1);
        assert_eq!(sub.pins(0), &[0, 1, 2]);
        assert_eq!(sub.net_weight(0), 7);
    }
}
