//! Workload generators following paper Section 6.1: IMAGE (biomedical image studies: our
//! sliding query streams, and `image-query`, the paper's query attributes) and SAT
//! (satellite data chunks around hot-spot regions), at high / medium / low overlap.
//! Deterministic for a seeded RNG.

mod image;
mod image_query;
mod sat;

pub(crate) use image::generate_image;
pub(crate) use image_query::generate_image_query;
pub(crate) use sat::generate_sat;

use serde::{Deserialize, Serialize};

/// Degree of file sharing among the tasks of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Overlap {
    /// Tasks share most of their files (the paper's high-overlap batches).
    High,
    /// Tasks share some of their files.
    Medium,
    /// Tasks share few files.
    Low,
}

/// Which application the batch emulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WorkloadKind {
    /// IMAGE: biomedical image studies, each task reading slices of shared image sets.
    Image,
    /// SAT: satellite data, each task reading chunks around a hot-spot region.
    Sat,
    /// IMAGE with queries as the paper describes them (patients, studies, modality; a hot
    /// patient range sized to the overlap), see `image_query.rs`.
    ImageQuery,
}

impl WorkloadKind {
    /// Generates `tasks` tasks of this kind; files are spread over `storage_nodes`.
    pub fn generate(
        self,
        overlap: Overlap,
        tasks: usize,
        storage_nodes: u32,
        rng: &mut impl rand::Rng,
    ) -> crate::staging::model::Workload {
        match self {
            WorkloadKind::Image => generate_image(overlap, tasks, storage_nodes, rng),
            WorkloadKind::Sat => generate_sat(overlap, tasks, storage_nodes, rng),
            WorkloadKind::ImageQuery => generate_image_query(overlap, tasks, storage_nodes, rng),
        }
    }
}

/// Interns file keys into dense file ids in first-use order.
pub(crate) struct FileTable<K> {
    ids: std::collections::HashMap<K, u32>,
    pub(crate) files: Vec<crate::staging::model::DataFile>,
}

impl<K: std::hash::Hash + Eq> FileTable<K> {
    pub(crate) fn new() -> Self {
        Self {
            ids: std::collections::HashMap::new(),
            files: Vec::new(),
        }
    }

    pub(crate) fn id(
        &mut self,
        key: K,
        file: impl FnOnce() -> crate::staging::model::DataFile,
    ) -> u32 {
        let next = self.files.len() as u32;
        *self.ids.entry(key).or_insert_with(|| {
            self.files.push(file());
            next
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn overlap_levels_are_ordered_and_near_the_paper() {
        for kind in [WorkloadKind::Image, WorkloadKind::Sat] {
            let mut measured = Vec::new();
            for overlap in [Overlap::High, Overlap::Medium, Overlap::Low] {
                let mut rng = ChaCha8Rng::seed_from_u64(7);
                let w = kind.generate(overlap, 2000, 6, &mut rng);
                assert_eq!(w.tasks.len(), 2000);
                assert!(w.validate(6).is_ok());
                measured.push(w.overlap());
            }
            assert!(
                measured[0] > measured[1] && measured[1] > measured[2],
                "{kind:?} {measured:?}"
            );
            assert!(
                (measured[0] - 0.85).abs() < 0.06,
                "{kind:?} high {}",
                measured[0]
            );
            assert!(
                (measured[1] - 0.40).abs() < 0.1,
                "{kind:?} medium {}",
                measured[1]
            );
        }
    }

    #[test]
    fn generation_is_deterministic() {
        let a = generate_sat(Overlap::High, 300, 4, &mut ChaCha8Rng::seed_from_u64(1));
        let b = generate_sat(Overlap::High, 300, 4, &mut ChaCha8Rng::seed_from_u64(1));
        assert_eq!(a, b);
    }
}
