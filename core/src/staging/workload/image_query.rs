//! IMAGE as the paper describes its queries (Section 6.1): "an image analysis program can
//! select a subset of images based on a set of patient ids and study ids, image modality,
//! and a date range", and overlap comes from "varying the values of patient and time
//! attributes across requests". The dataset is the same as `image.rs`'s: 5,000 patients ×
//! 3 studies (dates) × (6 MRI images of 1 MB + 1 CT image of 16 MB), spread round-robin
//! over the storage nodes.
//!
//! Stated by the paper: the dataset, image sizes, round-robin placement, the query
//! attributes, and the overlaps 85 % / 40 % / 0 %. Assumed here (the paper gives no
//! distribution): a query names 2 consecutive patient ids, a date range of 2 consecutive
//! studies, and one modality — MRI, CT or both, equally likely — so it reads 4, 24 or 28
//! images (64, 24 or 88 MB). The patient ids of a batch are drawn uniformly from a "hot"
//! range of H patients; H is chosen per batch so that the batch overlap
//! (1 − distinct files / file requests, the measure the paper gives for SAT) comes closest
//! to 85 % or 40 %; at 0 % every query gets patients of its own. Unlike `image.rs`'s sliding
//! streams, neighbouring queries in the batch need not share anything.

use rand::Rng;

use crate::staging::model::{DataFile, Task, Workload};
use crate::staging::workload::{FileTable, Overlap};

const PATIENTS: u64 = 5000;
const STUDIES: u64 = 3;
const MRI_PER_STUDY: u64 = 6;
const IMAGES_PER_STUDY: u64 = MRI_PER_STUDY + 1;
const IMAGES_PER_PATIENT: u64 = STUDIES * IMAGES_PER_STUDY;
/// Patient ids per query (assumed).
const QUERY_PATIENTS: u64 = 2;
/// Consecutive studies (dates) per query (assumed).
const QUERY_STUDIES: u64 = 2;
const MB: u64 = 1 << 20;

/// One query's random draws; the hot range maps `position` to a patient id.
#[derive(Debug, Clone, Copy)]
struct Draw {
    position: f64,
    first_study: u64,
    /// 0: MRI, 1: CT, 2: both.
    modality: u8,
}

/// Generates an IMAGE batch of `tasks` queries.
pub(crate) fn generate_image_query(
    overlap: Overlap,
    tasks: usize,
    storage_nodes: u32,
    rng: &mut impl Rng,
) -> Workload {
    let draws: Vec<Draw> = (0..tasks)
        .map(|_| Draw {
            position: rng.random::<f64>(),
            first_study: rng.random_range(0..=STUDIES - QUERY_STUDIES),
            modality: rng.random_range(0..3u8),
        })
        .collect();
    let offset = rng.random_range(0..PATIENTS);
    let target = match overlap {
        Overlap::High => 0.85,
        Overlap::Medium => 0.40,
        Overlap::Low => {
            // Disjoint patients: query q reads patients offset + 2q, 2q + 1.
            let starts = (0..tasks as u64).map(|q| offset + q * QUERY_PATIENTS);
            return build(&draws, starts, storage_nodes);
        }
    };
    let with_hot = |hot: u64| {
        let starts = draws
            .iter()
            .map(move |d| offset + (d.position * hot as f64) as u64);
        build(&draws, starts, storage_nodes)
    };
    // Overlap falls as the hot range widens: bisect on H, keep the closest.
    let (mut lo, mut hi) = (1u64, PATIENTS);
    let mut best = (f64::INFINITY, 1u64);
    while lo <= hi {
        let mid = (lo + hi) / 2;
        let o = with_hot(mid).overlap();
        if (o - target).abs() < best.0 {
            best = ((o - target).abs(), mid);
        }
        if o > target {
            lo = mid + 1;
        } else if mid == 1 {
            break;
        } else {
            hi = mid - 1;
        }
    }
    with_hot(best.1)
}

/// The batch whose query q starts at patient `starts[q]` (ids wrap around the dataset).
fn build(draws: &[Draw], starts: impl Iterator<Item = u64>, storage_nodes: u32) -> Workload {
    let mut table = FileTable::new();
    let tasks = draws
        .iter()
        .zip(starts)
        .map(|(d, start)| {
            let mut files = Vec::new();
            for p in start..start + QUERY_PATIENTS {
                let patient = p % PATIENTS;
                for study in d.first_study..d.first_study + QUERY_STUDIES {
                    let first = study * IMAGES_PER_STUDY;
                    let (from, to) = match d.modality {
                        0 => (0, MRI_PER_STUDY),
                        1 => (MRI_PER_STUDY, IMAGES_PER_STUDY),
                        _ => (0, IMAGES_PER_STUDY),
                    };
                    for within in first + from..first + to {
                        let image = patient * IMAGES_PER_PATIENT + within;
                        files.push(table.id(image, || DataFile {
                            size_bytes: if within % IMAGES_PER_STUDY == MRI_PER_STUDY {
                                16 * MB
                            } else {
                                MB
                            },
                            storage: ((patient + within) % storage_nodes as u64) as u32,
                        }));
                    }
                }
            }
            Task { files }
        })
        .collect();
    Workload {
        files: table.files,
        tasks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn overlap_hits_the_papers_levels_and_queries_have_the_stated_shape() {
        for (overlap, target) in [
            (Overlap::High, 0.85),
            (Overlap::Medium, 0.40),
            (Overlap::Low, 0.0),
        ] {
            let w = generate_image_query(overlap, 2000, 6, &mut ChaCha8Rng::seed_from_u64(3));
            assert_eq!(w.tasks.len(), 2000);
            assert!(
                (w.overlap() - target).abs() < 0.03,
                "{overlap:?}: {}",
                w.overlap()
            );
            for t in &w.tasks {
                // MRI: 2 patients x 2 studies x 6; CT: x 1; both: x 7.
                assert!([4, 24, 28].contains(&t.files.len()), "{}", t.files.len());
            }
        }
    }
}
