//! IMAGE workload (Section 6.1): 5,000 patients, each with 3 studies of 6 MRI images
//! (1 MB) and one CT image (16 MB), 66 MB per patient (≈ 330 GB in all); a patient's
//! images are spread round-robin over the storage nodes. A task analyses a window of 14
//! consecutive images (a range of patients and studies). Tasks come in query streams of
//! 50; successive tasks of a stream shift the window by round((1 − o)·14) images, which
//! gives overlap o = 85 %, 40 % or 0 % between neighbours. Task order is shuffled.

use rand::seq::SliceRandom;
use rand::Rng;

use crate::staging::model::{DataFile, Task, Workload};
use crate::staging::workload::{FileTable, Overlap};

const PATIENTS: u64 = 5000;
const STUDIES: u64 = 3;
const MRI_PER_STUDY: u64 = 6;
const IMAGES_PER_STUDY: u64 = MRI_PER_STUDY + 1;
const IMAGES_PER_PATIENT: u64 = STUDIES * IMAGES_PER_STUDY;
const WINDOW: u64 = 14;
const STREAM: usize = 50;
const MB: u64 = 1 << 20;

/// Generates an IMAGE batch of `tasks` tasks.
pub(crate) fn generate_image(
    overlap: Overlap,
    tasks: usize,
    storage_nodes: u32,
    rng: &mut impl Rng,
) -> Workload {
    let o = match overlap {
        Overlap::High => 0.85,
        Overlap::Medium => 0.40,
        Overlap::Low => 0.0,
    };
    let shift = (((1.0 - o) * WINDOW as f64).round() as u64).max(1);
    let total_images = PATIENTS * IMAGES_PER_PATIENT;
    let mut table = FileTable::new();
    let mut out = Vec::with_capacity(tasks);
    while out.len() < tasks {
        let start = rng.random_range(0..total_images);
        for i in 0..STREAM.min(tasks - out.len()) {
            let first = start + i as u64 * shift;
            let files = (first..first + WINDOW)
                .map(|g| {
                    let image = g % total_images;
                    table.id(image, || {
                        let patient = image / IMAGES_PER_PATIENT;
                        let within = image % IMAGES_PER_PATIENT;
                        let ct = within % IMAGES_PER_STUDY == MRI_PER_STUDY;
                        DataFile {
                            size_bytes: if ct { 16 * MB } else { MB },
                            storage: ((patient + within) % storage_nodes as u64) as u32,
                        }
                    })
                })
                .collect();
            out.push(Task { files });
        }
    }
    out.shuffle(rng);
    Workload {
        files: table.files,
        tasks: out,
    }
}
